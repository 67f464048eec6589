/* The library over protosocket against momento-local's protosocket port:
 * what the suites rerun with MOMENTO_TEST_TRANSPORT=protosocket (scalar,
 * coalescer, cancel, deadlines) cannot show because they do not know which
 * transport carried a call - that get, set and delete really leave gRPC,
 * and what only this transport has: its connections, its reconnection, its
 * frame limit, TLS with a token, the requests it hands back to gRPC. The
 * misbehaving-server cases are test_ps_fake.c's. */
#include "testing.h"
#include "testutil.h"

#include "momento/metrics.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A server with a protosocket port and cache "c". */
static momento_local *ps_server(void)
{
    momento_local_options *o = tu_options("c");
    assert_int_equal(momento_local_options_set_protosocket_port(o, 0), MOMENTO_OK);
    momento_local *s = tu_start(o);
    assert_true(momento_local_protosocket_port(s) > 0);
    return s;
}

/* A new configuration sending get, set and delete to `s`'s protosocket
 * port; the caller adds what it tests and frees it. */
static momento_config *ps_config(momento_local *s)
{
    momento_config *cfg = tu_config();
    char ep[64];
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", momento_local_protosocket_port(s));
    assert_int_equal(momento_config_set_transport(cfg, MOMENTO_TRANSPORT_PROTOSOCKET), MOMENTO_OK);
    assert_int_equal(momento_config_set_protosocket_endpoint(cfg, ep), MOMENTO_OK);
    return cfg;
}

static momento_client *ps_client(momento_local *s, momento_config *cfg)
{
    return tu_client_at(momento_local_endpoint(s), cfg);
}

/* A client of `s` on protosocket with nothing else set. */
static momento_client *ps_plain_client(momento_local *s)
{
    momento_config *cfg = ps_config(s);
    momento_client *c = ps_client(s, cfg);
    momento_config_free(cfg);
    return c;
}

/* The configuration's refusals, and a local client without an endpoint. */
static void test_config_refusals(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_transport(NULL, MOMENTO_TRANSPORT_GRPC),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_transport(cfg, (momento_transport)7),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    const char *bad[] = {"", "nohost", ":9004", "h:", "h:0", "h:70000", "h:12x", "[::1:9004"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(momento_config_set_protosocket_endpoint(cfg, bad[i]),
                         MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_protosocket_connections(cfg, 0),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_protosocket_connections(cfg, 65),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_protosocket_connections(cfg, 64), MOMENTO_OK);
    assert_int_equal(momento_config_set_protosocket_endpoint(cfg, "[::1]:9004"), MOMENTO_OK);
    assert_int_equal(momento_config_set_protosocket_endpoint(cfg, NULL), MOMENTO_OK);
    assert_int_equal(momento_config_set_transport(cfg, MOMENTO_TRANSPORT_PROTOSOCKET), MOMENTO_OK);
    /* Local credentials say nothing of a protosocket port. */
    momento_credentials *creds;
    assert_int_equal(momento_credentials_local(&creds, "127.0.0.1:1"), MOMENTO_OK);
    momento_client *c = (momento_client *)&creds; /* not touched on failure */
    assert_int_equal(momento_client_new(&c, cfg, creds), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "protosocket"));
    momento_credentials_free(creds);
    momento_config_free(cfg);
}

/* Get, set and delete leave gRPC: a client-wide fault header that fails
 * every gRPC Get, Set and Delete does not reach them, while an RPC that
 * stays on gRPC (Increment) gets it - and a request with its own headers,
 * which protosocket cannot carry, goes over gRPC too. */
static void test_scalar_calls_leave_grpc(void **state)
{
    (void)state;
    momento_local *s = ps_server();
    momento_client *c = ps_plain_client(s);
    momento__client_add_header(c, "return-error", "unavailable");
    momento__client_add_header(c, "error-rpcs", "get set delete increment");
    momento_local_reset_stats(s);

    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v1", 2, 0, NULL, NULL), MOMENTO_OK);
    tu_assert_get_str(c, "c", "k", "v1");
    assert_int_equal(momento_delete_sync(c, "c", "k", 1, NULL, NULL), MOMENTO_OK);
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_OK);
    assert_false(momento_result_is_hit(r));
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    momento_result_free(r);
    /* The server counts protosocket commands under the RPCs' names. */
    assert_int_equal(momento_local_rpc_count(s, "Set", 0), 1);
    assert_int_equal(momento_local_rpc_count(s, "Get", 0), 2);
    assert_int_equal(momento_local_rpc_count(s, "Delete", 0), 1);

    assert_int_equal(momento_increment_sync(c, "c", "n", 1, 1, 0, NULL, &r),
                     MOMENTO_ERR_SERVER_UNAVAILABLE);
    momento_result_free(r);

    momento_header h = {"x-trace", "abc"};
    momento_request_options o = {.size = sizeof(o), .headers = &h, .n_headers = 1};
    r = NULL;
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &o, &r), MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_int_equal(momento_result_grpc_status(r), 14);
    momento_result_free(r);
    assert_int_equal(momento_local_rpc_count(s, "Get", 14), 3); /* gRPC, three attempts */
    momento_client_free(c);
    momento_local_stop(s);
}

/* Batching steps aside on protosocket: every queued get and set goes as
 * its own pipelined command (no GetBatch, no SetBatch), values intact. */
static void test_batching_config_sends_commands(void **state)
{
    (void)state;
    momento_local *s = ps_server();
    momento_config *cfg = ps_config(s);
    assert_int_equal(momento_config_set_batching(cfg, 1, 200, 64, 1024 * 1024), MOMENTO_OK);
    momento_client *c = ps_client(s, cfg);
    momento_config_free(cfg);
    momento_local_reset_stats(s);
    enum { N = 400 };
    tu_counter k;
    tu_counter_init(&k);
    char key[16];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "b%d", i);
        assert_int_equal(momento_set(c, "c", key, strlen(key), key, strlen(key), 0, NULL,
                                     tu_count_cb, &k),
                         MOMENTO_OK);
    }
    assert_int_equal(tu_counter_wait(&k, N, 10000), N);
    assert_int_equal(k.ok, N);
    for (int i = 0; i < N; i += 37) {
        snprintf(key, sizeof(key), "b%d", i);
        tu_assert_get_str(c, "c", key, key);
    }
    assert_int_equal(momento_local_rpc_count(s, "Set", 0), N);
    assert_int_equal(momento_local_rpc_count(s, "SetBatch", -1), 0);
    assert_int_equal(momento_local_rpc_count(s, "GetBatch", -1), 0);
    tu_counter_destroy(&k);
    momento_client_free(c);
    momento_local_stop(s);
}

typedef struct seen {
    pthread_mutex_t lock;
    int n, get_hits, get_misses, sets, deletes;
    int bad_status;
    int over_ps, over_grpc; /* by the record's transport */
} seen;

static void on_metrics(const momento_request_metrics *m, void *ud)
{
    seen *w = ud;
    pthread_mutex_lock(&w->lock);
    w->n++;
    if (strcmp(m->method, "Get") == 0 && m->error == 0 && m->outcome == MOMENTO_OUTCOME_HIT)
        w->get_hits++;
    else if (strcmp(m->method, "Get") == 0 && m->outcome == MOMENTO_OUTCOME_MISS)
        w->get_misses++;
    else if (strcmp(m->method, "Set") == 0)
        w->sets++;
    else if (strcmp(m->method, "Delete") == 0)
        w->deletes++;
    if (m->grpc_status != 0 || m->attempts != 1 || !m->cache || strcmp(m->cache, "c") != 0)
        w->bad_status++;
    if (m->transport == MOMENTO_METRICS_TRANSPORT_PROTOSOCKET)
        w->over_ps++;
    else if (m->transport == MOMENTO_METRICS_TRANSPORT_GRPC)
        w->over_grpc++;
    pthread_mutex_unlock(&w->lock);
}

/* The metrics hook sees protosocket's requests as it sees gRPC's, and its
 * record says which carried each: get, set and delete protosocket, an
 * increment (which protosocket does not speak) gRPC. */
static void test_metrics_hook(void **state)
{
    (void)state;
    momento_local *s = ps_server();
    momento_config *cfg = ps_config(s);
    seen w = {.lock = PTHREAD_MUTEX_INITIALIZER};
    assert_int_equal(momento_config_set_metrics(cfg, on_metrics, &w), MOMENTO_OK);
    momento_client *c = ps_client(s, cfg);
    momento_config_free(cfg);
    assert_int_equal(momento_set_sync(c, "c", "m", 1, "x", 1, 0, NULL, NULL), MOMENTO_OK);
    tu_assert_get_str(c, "c", "m", "x");
    assert_int_equal(momento_delete_sync(c, "c", "m", 1, NULL, NULL), MOMENTO_OK);
    tu_assert_get_str(c, "c", "m", NULL);
    assert_int_equal(momento_increment_sync(c, "c", "n", 1, 1, 0, NULL, NULL), MOMENTO_OK);
    momento_client_free(c); /* the hook has run for every request by now */
    assert_int_equal(w.n, 5);
    assert_int_equal(w.over_ps, 4);
    assert_int_equal(w.over_grpc, 1);
    assert_int_equal(w.sets, 1);
    assert_int_equal(w.get_hits, 1);
    assert_int_equal(w.deletes, 1);
    assert_int_equal(w.get_misses, 1);
    assert_int_equal(w.bad_status, 0);
    momento_local_stop(s);
}

/* An UNAVAILABLE from the server is retried, as on gRPC (get, set and
 * delete are all idempotent, common/methods.def), up to the strategy's
 * three attempts, each counted by the server. */
static void test_retry(void **state)
{
    (void)state;
    momento_local *s = ps_server();
    momento_client *c = ps_plain_client(s);
    assert_int_equal(momento_set_sync(c, "c", "r", 1, "ok", 2, 0, NULL, NULL), MOMENTO_OK);
    momento_local_reset_stats(s);
    assert_int_equal(momento_local_protosocket_fault(s, "get", 14, 0, 1), MOMENTO_OK);
    tu_assert_get_str(c, "c", "r", "ok");
    assert_int_equal(momento_local_rpc_count(s, "Get", 14), 1);
    assert_int_equal(momento_local_rpc_count(s, "Get", 0), 1);
    assert_int_equal(momento_local_protosocket_fault(s, "set", 14, 0, 3), MOMENTO_OK);
    momento_result *r = NULL;
    assert_int_equal(momento_set_sync(c, "c", "r", 1, "no", 2, 0, NULL, &r),
                     MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_int_equal(momento_result_grpc_status(r), 14);
    momento_result_free(r);
    assert_int_equal(momento_local_rpc_count(s, "Set", 14), 3);
    tu_assert_get_str(c, "c", "r", "ok");
    momento_client_free(c);
    momento_local_stop(s);
}

/* Waits up to `ms` for the server to count `n` cancelled Gets. */
static bool cancelled_reach(momento_local *s, uint64_t n, int ms)
{
    int64_t until = tu_now_ms() + TU_MS(ms);
    while (momento_local_cancelled_calls(s, "Get") < n && tu_now_ms() < until)
        tu_wait_pause(0);
    return momento_local_cancelled_calls(s, "Get") >= n;
}

/* A deadline, and a cancel token, end a held get on the client and tell
 * the server with a cancel frame, which drops the command. The server holds
 * the gets for a minute, so TIMEOUT and CANCELLED are the deadline's and
 * the cancel's doing however slow the machine; a timeout comes no earlier
 * than its deadline (a timer cannot fire early). */
static void test_deadline_and_cancel_tell_the_server(void **state)
{
    (void)state;
    momento_local *s = ps_server();
    momento_client *c = ps_plain_client(s);
    tu_assert_get_str(c, "c", "warm", NULL); /* connected */
    assert_int_equal(momento_local_protosocket_fault(s, "get", -1, 60000, 2), MOMENTO_OK);

    momento_request_options o = {.size = sizeof(o), .timeout_ms = 300};
    momento_result *r = NULL;
    int64_t t0 = tu_now_ms();
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &o, &r), MOMENTO_ERR_TIMEOUT);
    int64_t took = tu_now_ms() - t0;
    assert_true(took >= 290);
    momento_result_free(r);
    assert_true(cancelled_reach(s, 1, 20000));

    momento_cancel_token *tok;
    assert_int_equal(momento_cancel_token_new(&tok), MOMENTO_OK);
    momento_request_options oc = {.size = sizeof(oc), .cancel = tok};
    tu_counter k;
    tu_counter_init(&k);
    assert_int_equal(momento_get(c, "c", "k", 1, &oc, tu_count_cb, &k), MOMENTO_OK);
    tu_wait_pause(0);
    momento_cancel(tok);
    assert_int_equal(tu_counter_wait(&k, 1, 20000), 1);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_CANCELLED), 1);
    assert_true(cancelled_reach(s, 2, 20000));
    momento_cancel_token_free(tok);
    tu_counter_destroy(&k);
    /* The connection is still good. */
    tu_assert_get_str(c, "c", "k", NULL);
    momento_client_free(c);
    momento_local_stop(s);
}

/* Gets held by the server with 24 deadlines given in a shuffled order end
 * TIMEOUT in the order of their deadlines: the transport keeps them in a
 * list sorted by deadline, each placed from its tail, and in a heap those
 * that would land deeper (ps_transport.c, deadline_add); the earliest of
 * both ends first. */
static void test_deadlines_end_in_their_order(void **state)
{
    (void)state;
    momento_local *s = ps_server();
    momento_client *c = ps_plain_client(s);
    tu_assert_get_str(c, "c", "warm", NULL); /* connected */
    assert_int_equal(momento_local_protosocket_fault(s, "get", -1, 600000, 1000), MOMENTO_OK);
    enum { N = 24 };
    tu_rec rec[N];
    memset(rec, 0, sizeof(rec));
    for (int i = 0; i < N; i++) {
        int rank = (i * 7) % N; /* 0, 7, 14, 21, 4, ...: every rank once */
        momento_request_options o = {.size = sizeof(o),
                                     .timeout_ms = (uint32_t)TU_MS(200 + 40 * rank)};
        char key[16];
        snprintf(key, sizeof(key), "k%d", rank);
        assert_int_equal(momento_get(c, "c", key, strlen(key), &o, tu_rec_cb, &rec[rank]),
                         MOMENTO_OK);
    }
    for (int rank = 0; rank < N; rank++) {
        assert_int_equal(tu_rec_wait(&rec[rank], 30000), 1);
        assert_int_equal(rec[rank].error, MOMENTO_ERR_TIMEOUT);
        if (rank > 0)
            assert_true(rec[rank].seq > rec[rank - 1].seq);
    }
    momento_client_free(c);
    momento_local_stop(s);
}

/* Freed with 300 requests held by the server: each gets its one callback,
 * CANCELLED, and the free does not wait for the server. */
static void test_free_with_requests_in_flight(void **state)
{
    (void)state;
    momento_local *s = ps_server();
    momento_config *cfg = ps_config(s);
    assert_int_equal(momento_config_set_protosocket_connections(cfg, 3), MOMENTO_OK);
    momento_client *c = ps_client(s, cfg);
    momento_config_free(cfg);
    assert_int_equal(momento_local_protosocket_fault(s, "get set", -1, 60000, 100000), MOMENTO_OK);
    enum { N = 300 };
    tu_counter k;
    tu_counter_init(&k);
    for (int i = 0; i < N; i++) {
        char key[16];
        snprintf(key, sizeof(key), "f%d", i);
        if (i % 2)
            assert_int_equal(momento_get(c, "c", key, strlen(key), NULL, tu_count_cb, &k),
                             MOMENTO_OK);
        else
            assert_int_equal(momento_set(c, "c", key, strlen(key), "v", 1, 0, NULL, tu_count_cb,
                                         &k),
                             MOMENTO_OK);
    }
    tu_wait_pause(100);
    momento_client_free(c);
    /* All CANCELLED: the free ended them; waiting for the server would
     * have taken the minute it holds them and answered OK. */
    assert_int_equal(k.total, N);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_CANCELLED), N);
    tu_counter_destroy(&k);
    momento_local_stop(s);
}

/* The server goes away and comes back on the same ports: requests fail
 * (UNAVAILABLE, quickly: no one is listening) while it is gone, and the
 * client connects again by itself once it is back. */
static void test_reconnects(void **state)
{
    (void)state;
    momento_local *s = ps_server();
    int port = momento_local_port(s), ps_port = momento_local_protosocket_port(s);
    momento_config *cfg = ps_config(s);
    assert_int_equal(momento_config_set_protosocket_connections(cfg, 2), MOMENTO_OK);
    assert_int_equal(momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(2000)), MOMENTO_OK);
    momento_client *c = ps_client(s, cfg);
    momento_config_free(cfg);
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    momento_local_stop(s);

    momento_result *r = NULL;
    int rc = momento_get_sync(c, "c", "k", 1, NULL, &r);
    assert_true(rc == MOMENTO_ERR_SERVER_UNAVAILABLE || rc == MOMENTO_ERR_TIMEOUT);
    momento_result_free(r);

    momento_local_options *o = tu_options("c");
    assert_int_equal(momento_local_options_set_port(o, port), MOMENTO_OK);
    assert_int_equal(momento_local_options_set_protosocket_port(o, ps_port), MOMENTO_OK);
    s = NULL;
    int64_t until = tu_now_ms() + 30000;
    while (momento_local_start(&s, o) != MOMENTO_OK && tu_now_ms() < until)
        tu_wait_pause(100); /* the old sockets may linger a moment */
    momento_local_options_free(o);
    assert_non_null(s);

    /* Back by itself: tried until it is (the longest backoff is 5 s), with
     * a minute's watchdog, not a bound on how soon. */
    until = tu_now_ms() + TU_MS(60000);
    do {
        rc = momento_set_sync(c, "c", "k2", 2, "w", 1, 0, NULL, NULL);
        if (rc != MOMENTO_OK)
            tu_wait_pause(100);
    } while (rc != MOMENTO_OK && tu_now_ms() < until);
    assert_int_equal(rc, MOMENTO_OK);
    tu_assert_get_str(c, "c", "k2", "w");
    momento_client_free(c);
    momento_local_stop(s);
}

/* A command over the frame limit (4 MiB) is refused as the server would
 * refuse it, LIMIT_EXCEEDED, and costs nothing else; one under it goes. */
static void test_frame_limit(void **state)
{
    (void)state;
    momento_local *s = ps_server();
    momento_client *c = ps_plain_client(s);
    size_t big = 4u * 1024 * 1024 + 1024, fits = 3u * 1024 * 1024;
    char *v = malloc(big);
    for (size_t i = 0; i < big; i++)
        v[i] = (char)('a' + i % 26);
    momento_result *r = NULL;
    assert_int_equal(momento_set_sync(c, "c", "big", 3, v, big, 0, NULL, &r),
                     MOMENTO_ERR_LIMIT_EXCEEDED);
    momento_result_free(r);
    assert_int_equal(momento_set_sync(c, "c", "fits", 4, v, fits, 0, NULL, NULL), MOMENTO_OK);
    tu_assert_get(c, "c", "fits", 4, v, fits);
    free(v);
    momento_client_free(c);
    momento_local_stop(s);
}

typedef struct worker {
    momento_client *c;
    int index, bad;
} worker;

static void *hammer(void *arg)
{
    worker *w = arg;
    char key[32], val[32];
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof(key), "t%d-%d", w->index, i);
        snprintf(val, sizeof(val), "v%d-%d", w->index, i * 7);
        if (momento_set_sync(w->c, "c", key, strlen(key), val, strlen(val), 0, NULL, NULL) !=
            MOMENTO_OK) {
            w->bad++;
            continue;
        }
        momento_result *r = NULL;
        size_t n = 0;
        const void *got = NULL;
        if (momento_get_sync(w->c, "c", key, strlen(key), NULL, &r) == MOMENTO_OK)
            got = momento_result_value(r, &n);
        if (!got || n != strlen(val) || memcmp(got, val, n) != 0)
            w->bad++;
        momento_result_free(r);
    }
    return NULL;
}

/* Blocking calls from four threads over two connections: every value read
 * back is the one written. */
static void test_threads(void **state)
{
    (void)state;
    momento_local *s = ps_server();
    momento_config *cfg = ps_config(s);
    assert_int_equal(momento_config_set_protosocket_connections(cfg, 2), MOMENTO_OK);
    momento_client *c = ps_client(s, cfg);
    momento_config_free(cfg);
    pthread_t th[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){.c = c, .index = i};
        pthread_create(&th[i], NULL, hammer, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].bad, 0);
    }
    momento_client_free(c);
    momento_local_stop(s);
}

/* The protosocket port refuses a wrong token as the gRPC port does. */
static void test_wrong_token_refused(void **state)
{
    (void)state;
    momento_local_options *o = tu_options("c");
    assert_int_equal(momento_local_options_set_protosocket_port(o, 0), MOMENTO_OK);
    assert_int_equal(momento_local_options_set_auth_token(o, "secret"), MOMENTO_OK);
    momento_local *s = tu_start(o);
    momento_config *cfg = ps_config(s);
    momento_client *c = ps_client(s, cfg); /* local credentials: an empty token */
    momento_config_free(cfg);
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_ERR_AUTHENTICATION);
    assert_int_equal(momento_result_grpc_status(r), 16);
    momento_result_free(r);
    assert_int_equal(momento_local_rpc_count(s, "Get", 0), 0);
    momento_client_free(c);
    momento_local_stop(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_refusals),
        cmocka_unit_test(test_scalar_calls_leave_grpc),
        cmocka_unit_test(test_batching_config_sends_commands),
        cmocka_unit_test(test_metrics_hook),
        cmocka_unit_test(test_retry),
        cmocka_unit_test(test_deadline_and_cancel_tell_the_server),
        cmocka_unit_test(test_deadlines_end_in_their_order),
        cmocka_unit_test(test_free_with_requests_in_flight),
        cmocka_unit_test(test_reconnects),
        cmocka_unit_test(test_frame_limit),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_wrong_token_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
