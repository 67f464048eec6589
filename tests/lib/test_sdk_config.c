/* The official SDKs' client options, against the local server: presets,
 * retry strategies (none, fixed count, exponential backoff), read concern
 * per client and per request, connection renewal after idle time or age,
 * and the cap on requests in flight. */
#include "engine/client.h" /* struct momento_client: its transport */
#include "transport/grpc/grpc_transport.h" /* ...and the gRPC one's channels */
#include "momento/coalescer.h"
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_presets(void **state)
{
    (void)state;
    static const struct {
        momento_preset p;
        uint32_t timeout_ms, keepalive_ms;
    } want[] = {
        {MOMENTO_PRESET_LAPTOP, 5000, 5000},
        {MOMENTO_PRESET_IN_REGION, 1100, 5000},
        {MOMENTO_PRESET_IN_REGION_LOW_LATENCY, 500, 5000},
        {MOMENTO_PRESET_LAMBDA, 1100, 0},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        momento_config *cfg = NULL;
        assert_int_equal(momento_config_new_preset(&cfg, want[i].p), MOMENTO_OK);
        assert_int_equal(momento_config_timeout_ms(cfg), want[i].timeout_ms);
        assert_int_equal(momento_config_keepalive_ms(cfg), want[i].keepalive_ms);
        assert_int_equal(momento_config_max_idle_ms(cfg), MOMENTO_DEFAULT_MAX_IDLE_MS);
        assert_int_equal(momento_config_read_concern(cfg), MOMENTO_READ_BALANCED);
        /* A preset is a working config. */
        momento_client *c = tu_client(tu_fx.server, cfg);
        assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
        momento_client_free(c);
        momento_config_free(cfg);
    }
    momento_config *cfg = (momento_config *)&cfg; /* must be overwritten */
    assert_int_equal(momento_config_new_preset(&cfg, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_null(cfg);
    assert_int_equal(momento_config_new_preset(&cfg, 5), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_new_preset(NULL, MOMENTO_PRESET_LAPTOP),
                     MOMENTO_ERR_INVALID_ARGUMENT);
}

static void test_config_refusals(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_read_concern(cfg, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_read_concern(cfg, 3), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_read_concern(NULL, MOMENTO_READ_CONSISTENT),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_retry_exponential(cfg, 3, 0, 100),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_retry_exponential(cfg, 3, 200, 100),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_retry_exponential(cfg, 101, 1, 100),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_retry_exponential(NULL, 3, 1, 100),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_retry_none(NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_connection_lifetime(cfg, 0, 999),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_connection_lifetime(cfg, 86400001u, 0),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_max_concurrent_requests(cfg, 1000001u),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_max_concurrent_requests(NULL, 1),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    momento_config_free(cfg);
}

/* A client whose gets fail `failures` times with `status` (a fault-injection
 * session of its own), then succeed. */
/* A client whose first `failures` calls of `rpc` (a fault name) in
 * session `id` are answered `status`. */
static momento_client *failing_rpc_client(momento_config *cfg, const char *id, const char *status,
                                          const char *rpc, int failures)
{
    momento_client *c = tu_client(tu_fx.server, cfg);
    char n[16];
    snprintf(n, sizeof(n), "%d", failures);
    momento__client_add_header(c, "request-id", id);
    momento__client_add_header(c, "return-error", status);
    momento__client_add_header(c, "error-rpcs", rpc);
    momento__client_add_header(c, "error-count", n);
    return c;
}

static momento_client *failing_client(momento_config *cfg, const char *id, const char *status,
                                      int failures)
{
    return failing_rpc_client(cfg, id, status, "get", failures);
}

static void get_expect(momento_client *c, int want_err, int want_attempts)
{
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), want_err);
    assert_int_equal(momento_result_error(r), want_err);
    assert_int_equal(momento_result_attempts(r), want_attempts);
    momento_result_free(r);
}

static void test_retry_none(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_retry_none(cfg), MOMENTO_OK);
    momento_client *c = failing_client(cfg, "retry-none", "unavailable", 1);
    get_expect(c, MOMENTO_ERR_SERVER_UNAVAILABLE, 1);
    get_expect(c, MOMENTO_OK, 1); /* the session's one failure is spent */
    momento_client_free(c);
    momento_config_free(cfg);
}

/* The JS SDK retries a CANCELLED the server sent (deployments), but never
 * a non-idempotent RPC. */
static void test_retry_server_cancelled(void **state)
{
    (void)state;
    momento_client *c = failing_client(NULL, "retry-cancelled", "cancelled", 2);
    get_expect(c, MOMENTO_OK, 3);
    momento_client_free(c);

    c = failing_rpc_client(NULL, "retry-cancelled-incr", "cancelled", "increment", 1);
    momento_result *r = NULL;
    assert_int_equal(momento_increment_sync(c, "c", "n", 1, 1, 0, NULL, &r),
                     MOMENTO_ERR_CANCELLED);
    assert_int_equal(momento_result_error(r), MOMENTO_ERR_CANCELLED);
    assert_int_equal(momento_result_attempts(r), 1);
    momento_result_free(r);
    momento_client_free(c);
}

/* Opted in, a server's DEADLINE_EXCEEDED is retried for an idempotent get
 * (Go SDK #663), never for an increment; off (the default), it is the
 * request's TIMEOUT, delivered at its deadline. */
static void test_retry_deadline_exceeded(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_retry_deadline_exceeded(NULL, 1),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_retry_deadline_exceeded(cfg, 1), MOMENTO_OK);
    momento_client *c = failing_client(cfg, "retry-de", "deadline-exceeded", 2);
    get_expect(c, MOMENTO_OK, 3);
    momento_client_free(c);
    c = failing_rpc_client(cfg, "retry-de-incr", "deadline-exceeded", "increment", 1);
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.timeout_ms = (uint32_t)TU_MS(300);
    momento_result *r = NULL;
    assert_int_equal(momento_increment_sync(c, "c", "n", 1, 1, 0, &o, &r), MOMENTO_ERR_TIMEOUT);
    assert_int_equal(momento_result_attempts(r), 1);
    momento_result_free(r);
    momento_client_free(c);
    momento_config_free(cfg);

    /* The default: not retried. */
    c = failing_client(NULL, "retry-de-off", "deadline-exceeded", 1);
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &o, &r), MOMENTO_ERR_TIMEOUT);
    assert_int_equal(momento_result_attempts(r), 1);
    momento_result_free(r);
    momento_client_free(c);
}

/* Client-wide headers (the SDKs' middleware headers): on every request of
 * the client - here momento-local's fault headers, which fail the first get
 * of their session; refused as a request's own would be. */
static void test_client_headers(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_add_header(cfg, "authorization", "x"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "sends itself"));
    assert_int_equal(momento_config_add_header(cfg, "Upper", "x"), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_add_header(cfg, "x-ok", "\x01"), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_add_header(NULL, "x-ok", "v"), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_add_header(cfg, "request-id", "client-headers"), MOMENTO_OK);
    assert_int_equal(momento_config_add_header(cfg, "return-error", "invalid-argument"),
                     MOMENTO_OK);
    assert_int_equal(momento_config_add_header(cfg, "error-rpcs", "get"), MOMENTO_OK);
    assert_int_equal(momento_config_add_header(cfg, "error-count", "1"), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    get_expect(c, MOMENTO_ERR_INVALID_ARGUMENT, 1);
    get_expect(c, MOMENTO_OK, 1); /* the session's one failure is spent */
    momento_client_free(c);
    for (int i = 4; i < MOMENTO_MAX_CLIENT_HEADERS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "x-h%d", i);
        assert_int_equal(momento_config_add_header(cfg, name, "v"), MOMENTO_OK);
    }
    assert_int_equal(momento_config_add_header(cfg, "x-one-more", "v"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "MOMENTO_MAX_CLIENT_HEADERS"));
    momento_config_free(cfg);
}

/* A maximum message length (the JS SDK's withMaxMessageLength): a request
 * or a reply past it fails CLIENT_RESOURCE_EXHAUSTED (the client's own
 * limit, not the service's); smaller ones pass. */
static void test_max_message_bytes(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_max_message_bytes(cfg, MOMENTO_MIN_MESSAGE_BYTES - 1),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "outside"));
    assert_int_equal(momento_config_set_max_message_bytes(cfg, MOMENTO_MAX_MESSAGE_BYTES + 1),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_max_message_bytes(cfg, 64 * 1024), MOMENTO_OK);
    momento_client *small = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    momento_client *big = tu_client(tu_fx.server, NULL);
    enum { BIG = 100 * 1024 };
    char *v = malloc(BIG);
    memset(v, 'v', BIG);
    momento_result *r = NULL;
    /* Sending past it. */
    assert_int_equal(momento_set_sync(small, "c", MOMENTO_STR("mm-big"), v, BIG, 0, NULL, &r),
                     MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED);
    momento_result_free(r);
    /* Receiving past it: another client stored it. */
    assert_int_equal(momento_set_sync(big, "c", MOMENTO_STR("mm-big"), v, BIG, 0, NULL, NULL),
                     MOMENTO_OK);
    assert_int_equal(momento_get_sync(small, "c", MOMENTO_STR("mm-big"), NULL, &r),
                     MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED);
    momento_result_free(r);
    /* Below it, as always. */
    assert_int_equal(momento_set_sync(small, "c", MOMENTO_STR("mm-small"), v, 1000, 0, NULL, NULL),
                     MOMENTO_OK);
    assert_int_equal(momento_get_sync(small, "c", MOMENTO_STR("mm-small"), NULL, &r), MOMENTO_OK);
    assert_true(momento_result_is_hit(r));
    momento_result_free(r);
    free(v);
    momento_client_free(small);
    momento_client_free(big);
}

/* tu_count_cb(), counting a callback of more than one attempt in
 * bad_values. */
static void attempts_cb(const momento_result *r, void *ud)
{
    tu_counter *k = ud;
    if (momento_result_attempts(r) != 1)
        k->bad_values++; /* counted before the callback is */
    tu_count_cb(r, ud);
}

static void test_retry_exponential(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    /* No count limit: four failures are retried through; delays drawn
     * from [20, 30], [40, 60], [40, 60], [40, 60] ms: at least 140 ms. */
    assert_int_equal(momento_config_set_retry_exponential(cfg, 0, 20000, 40000), MOMENTO_OK);
    momento_client *c = failing_client(cfg, "retry-exp", "internal", 4);
    int64_t t0 = tu_now_ms();
    get_expect(c, MOMENTO_OK, 5);
    assert_true(tu_now_ms() - t0 >= 140);
    momento_client_free(c);

    /* A count limit ends it; a status outside the list is not retried. */
    assert_int_equal(momento_config_set_retry_exponential(cfg, 2, 1000, 8000), MOMENTO_OK);
    c = failing_client(cfg, "retry-exp-limit", "unavailable", 5);
    get_expect(c, MOMENTO_ERR_SERVER_UNAVAILABLE, 2);
    momento_client_free(c);
    c = failing_client(cfg, "retry-exp-status", "permission-denied", 1);
    get_expect(c, MOMENTO_ERR_PERMISSION, 1);
    momento_client_free(c);

    /* A delay that would end past the deadline is not waited for: the
     * first retry's delay (60 .. 90 s) ends past the 50 s deadline, and
     * the get is called back UNAVAILABLE after one attempt within the
     * watchdog's 30 s, before the deadline could have ended it. (Not
     * scaled: the deadline must stay short of the delay.) */
    momento_config_set_timeout_ms(cfg, 50000);
    assert_int_equal(momento_config_set_retry_exponential(cfg, 0, 60000000, 60000000),
                     MOMENTO_OK);
    c = failing_client(cfg, "retry-exp-deadline", "unavailable", 5);
    tu_counter k;
    tu_counter_init(&k);
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, attempts_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 1, 30000), 1);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_SERVER_UNAVAILABLE), 1);
    assert_int_equal(k.bad_values, 0); /* one attempt */
    momento_client_free(c);
    tu_counter_destroy(&k);
    momento_config_free(cfg);
}

static uint64_t concern_headers(void)
{
    return momento_local_header_count(tu_fx.server, "read-concern");
}

static void test_read_concern(void **state)
{
    (void)state;
    momento_request_options consistent = MOMENTO_REQUEST_OPTIONS_INIT;
    consistent.read_concern = MOMENTO_READ_CONSISTENT;
    momento_request_options balanced = MOMENTO_REQUEST_OPTIONS_INIT;
    balanced.read_concern = MOMENTO_READ_BALANCED;
    momento_result *r = NULL;

    /* Default client: BALANCED, which is sent as no header at all. */
    momento_client *c = tu_client(tu_fx.server, NULL);
    uint64_t before = concern_headers();
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(concern_headers(), before);
    /* One request CONSISTENT. */
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &consistent, &r), MOMENTO_OK);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(concern_headers(), before + 1);
    /* An unknown concern is refused before sending. */
    momento_request_options bad = MOMENTO_REQUEST_OPTIONS_INIT;
    bad.read_concern = 3;
    r = (momento_result *)&r;
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &bad, &r), MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    momento_client_free(c);

    /* A CONSISTENT client sends it with every data call, a request may
     * ask for BALANCED; control calls never carry it. */
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_read_concern(cfg, MOMENTO_READ_CONSISTENT), MOMENTO_OK);
    c = tu_client(tu_fx.server, cfg);
    before = concern_headers();
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_OK);
    assert_true(momento_result_is_hit(r));
    momento_result_free(r);
    assert_int_equal(concern_headers(), before + 2);
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &balanced, &r), MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(momento_list_caches_sync(c, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(concern_headers(), before + 2);
    momento_client_free(c);

    /* Coalesced: a request of another concern than the client's joins no
     * RPC in flight; the rest share one. Each keeps its callback. All are
     * submitted behind a gate, so every RPC is still in flight when the
     * next request comes (issue 46: a 100 ms hold was a window). */
    c = tu_client(tu_fx.server, NULL);
    momento_coalescer *co = tu_coalescer(c);
    tu_counter kc;
    tu_counter_init(&kc);
    before = concern_headers();
    uint64_t gets = momento_local_rpc_count(tu_fx.server, "Get", 0);
    tu_gate *g = tu_gate_close(c);
    for (int i = 0; i < 6; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "cc", 2, i < 3 ? &consistent : NULL,
                                                tu_count_cb, &kc),
                         MOMENTO_OK);
    momento_coalescer_stats cs = tu_coalescer_stats(co);
    assert_int_equal(cs.get_coalesced, 2);
    tu_gate_open(g);
    assert_int_equal(tu_counter_wait(&kc, 6, (int)TU_MS(5000)), 6);
    assert_int_equal(kc.ok, 6);
    assert_int_equal(concern_headers(), before + 3);
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "Get", 0) - gets, 4);
    tu_counter_destroy(&kc);
    momento_coalescer_free(co);
    momento_client_free(c);

    /* With batching on, a request of another concern is sent alone (a
     * batch has one set of headers) and still answered. */
    momento_config_set_read_concern(cfg, MOMENTO_READ_BALANCED);
    momento_config_set_batching(cfg, 1, 0, 64, 1024 * 1024);
    c = tu_client(tu_fx.server, cfg);
    tu_counter k;
    tu_counter_init(&k);
    before = concern_headers();
    for (int i = 0; i < 20; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, i % 2 ? &consistent : NULL, tu_count_cb, &k),
                         MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 20, (int)TU_MS(5000)), 20);
    assert_int_equal(k.ok, 20);
    assert_int_equal(concern_headers(), before + 10);
    tu_counter_destroy(&k);
    momento_client_free(c);
    momento_config_free(cfg);
}

static momento__channel *data_channel(momento_client *c)
{
    return atomic_load(&((momento__grpc_transport *)c->transport)->channels.data[0].current);
}

/* A channel stuck in TRANSIENT_FAILURE (its server went away) is replaced
 * at the call after a failure, not kept through gRPC's reconnect backoff
 * (JS SDK #1540); with the server back on its port, the next call is
 * answered. */
static void test_stuck_channel_replaced(void **state)
{
    (void)state;
    momento_local *s = tu_server_with_cache("c");
    int port = momento_local_port(s);
    momento_client *c = tu_client(s, NULL);
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, NULL), MOMENTO_OK);
    momento__channel *first = data_channel(c);
    momento_local_stop(s);
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.timeout_ms = (uint32_t)TU_MS(1000);
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &o, NULL), MOMENTO_ERR_SERVER_UNAVAILABLE);
    tu_wait_until(grpc_channel_check_connectivity_state(first->channel, 0) ==
                      GRPC_CHANNEL_TRANSIENT_FAILURE,
                  30000);
    assert_int_equal(grpc_channel_check_connectivity_state(first->channel, 0),
                     GRPC_CHANNEL_TRANSIENT_FAILURE);
    /* The last call failed on it: this one finds it stuck and replaces it. */
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &o, NULL), MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_ptr_not_equal(data_channel(c), first);

    momento_local_options *lo = tu_options("c");
    momento_local_options_set_port(lo, port);
    momento_local *back = NULL;
    for (int i = 0; i < 100 && momento_local_start(&back, lo) != MOMENTO_OK; i++)
        usleep(20000); /* the port may take a moment to be free */
    momento_local_options_free(lo);
    assert_non_null(back);
    /* Past the one replacement a second a slot may have: the next call
     * after a failure gets a fresh channel, which connects at once. */
    usleep(1100 * 1000);
    o.timeout_ms = (uint32_t)TU_MS(30000);
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &o, NULL), MOMENTO_OK);
    momento_client_free(c);
    momento_local_stop(back);
}

static void test_connection_renewal(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    momento_result *r = NULL;

    /* Idle past max idle: the next call goes out on a new channel. The
     * limits scale with the run (valgrind): a call there can take longer
     * than 100 ms, and the busy part below needs calls well inside it. */
    uint32_t max_idle = (uint32_t)TU_MS(100);
    assert_int_equal(momento_config_set_connection_lifetime(cfg, max_idle, 0), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    momento__channel *first = data_channel(c);
    usleep((useconds_t)TU_MS(300) * 1000);
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    momento_result_free(r);
    assert_ptr_not_equal(data_channel(c), first);
    /* Busy: calls 20 ms apart keep the channel - asserted when they were
     * in fact no further apart than max idle; a machine too loaded for
     * that cannot tell (the replacement would be right then). */
    momento__channel *second = data_channel(c);
    int64_t widest = 0, last = tu_now_ms();
    for (int i = 0; i < 10; i++) {
        int64_t now = tu_now_ms();
        if (now - last > widest)
            widest = now - last;
        assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_OK);
        momento_result_free(r);
        last = tu_now_ms();
        usleep(20 * 1000);
    }
    if (widest < (int64_t)max_idle / 2)
        assert_ptr_equal(data_channel(c), second);
    momento_client_free(c);

    /* Older than max age: replaced even though busy. */
    uint32_t max_age = (uint32_t)TU_MS(1000);
    assert_int_equal(momento_config_set_connection_lifetime(cfg, 0, max_age), MOMENTO_OK);
    c = tu_client(tu_fx.server, cfg);
    first = data_channel(c);
    /* Until it is replaced; a minute's watchdog, not a bound on when. */
    int64_t t0 = tu_now_ms();
    while (tu_now_ms() - t0 < (int64_t)max_age + 60000 && data_channel(c) == first) {
        assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_OK);
        assert_int_equal(momento_result_error(r), MOMENTO_OK);
        momento_result_free(r);
        usleep(50 * 1000);
    }
    assert_ptr_not_equal(data_channel(c), first);
    momento_client_free(c);

    /* Off: never replaced. */
    assert_int_equal(momento_config_set_connection_lifetime(cfg, 0, 0), MOMENTO_OK);
    c = tu_client(tu_fx.server, cfg);
    first = data_channel(c);
    usleep(200 * 1000);
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    assert_ptr_equal(data_channel(c), first);
    momento_client_free(c);
    momento_config_free(cfg);
}

/* A client capped at `cap` requests in flight whose gets the server holds
 * for `delay_ms`. */
static momento_client *capped_client(uint32_t cap, const char *id, const char *delay_ms)
{
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_max_concurrent_requests(cfg, cap), MOMENTO_OK);
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(10000));
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    momento__client_add_header(c, "request-id", id);
    momento__client_add_header(c, "delay-rpcs", "get");
    momento__client_add_header(c, "delay-ms", delay_ms);
    return c;
}

/* The first two gets are held by the server until their token is
 * cancelled (delay-count 2; the later ones are answered at once): with a
 * cap of 2 the other four wait in the client - none reached the server
 * while the two were held - and go out, and are answered, once the two
 * have ended. Order, not time. */
static void test_max_concurrent_queues(void **state)
{
    (void)state;
    momento_client *c = capped_client(2, "cap-queue", "999999999");
    momento__client_add_header(c, "delay-count", "2");
    momento_cancel_token *tok;
    assert_int_equal(momento_cancel_token_new(&tok), MOMENTO_OK);
    momento_request_options first = MOMENTO_REQUEST_OPTIONS_INIT;
    first.cancel = tok;
    tu_counter held, k;
    tu_counter_init(&held);
    tu_counter_init(&k);
    uint64_t gets = momento_local_rpc_count(tu_fx.server, "Get", -1);
    for (int i = 0; i < 2; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, &first, tu_count_cb, &held), MOMENTO_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    /* Every request is in flight for the client; the server holds the
     * cap's two. */
    assert_int_equal(momento_client_in_flight(c), 6);
    tu_wait_until(momento_local_parked_calls(tu_fx.server) == 2, 20000);
    assert_int_equal(momento_local_parked_calls(tu_fx.server), 2);
    usleep(100 * 1000); /* time for a call past the cap to show */
    /* One sent past the cap would have been answered at once. */
    assert_int_equal(k.total, 0);
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "Get", -1), gets);
    assert_int_equal(momento_local_parked_calls(tu_fx.server), 2);
    momento_cancel(tok);
    assert_int_equal(tu_counter_wait(&held, 2, 30000), 2);
    assert_int_equal(tu_counter_errors(&held, MOMENTO_ERR_CANCELLED), 2);
    assert_int_equal(tu_counter_wait(&k, 4, 30000), 4);
    assert_int_equal(k.ok, 4);
    momento_cancel_token_free(tok);
    tu_counter_destroy(&held);
    tu_counter_destroy(&k);
    momento_client_free(c);
}

static void test_max_concurrent_endings(void **state)
{
    (void)state;
    /* The one the cap lets through is held for good: the others wait in
     * the client, and only their deadline, their cancel or the free can
     * end them. */
    momento_client *c = capped_client(1, "cap-endings", "999999999");
    tu_counter held, timed, cancelled, freed;
    tu_counter_init(&held);
    tu_counter_init(&timed);
    tu_counter_init(&cancelled);
    tu_counter_init(&freed);
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_count_cb, &held), MOMENTO_OK);

    /* A queued request's deadline passes while it waits. */
    momento_request_options quick = MOMENTO_REQUEST_OPTIONS_INIT;
    quick.timeout_ms = 100;
    assert_int_equal(momento_get(c, "c", "k", 1, &quick, tu_count_cb, &timed), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&timed, 1, 30000), 1);
    assert_int_equal(tu_counter_errors(&timed, MOMENTO_ERR_TIMEOUT), 1);
    assert_int_equal(held.total, 0); /* while the held one still is */

    /* A queued request is cancelled by its token. */
    momento_cancel_token *tok;
    momento_cancel_token_new(&tok);
    momento_request_options with_tok = MOMENTO_REQUEST_OPTIONS_INIT;
    with_tok.cancel = tok;
    assert_int_equal(momento_get(c, "c", "k", 1, &with_tok, tu_count_cb, &cancelled), MOMENTO_OK);
    momento_cancel(tok);
    assert_int_equal(tu_counter_wait(&cancelled, 1, 30000), 1);
    assert_int_equal(tu_counter_errors(&cancelled, MOMENTO_ERR_CANCELLED), 1);
    momento_cancel_token_free(tok);

    /* Freeing the client ends the queued ones too, each exactly once. */
    for (int i = 0; i < 5; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_count_cb, &freed), MOMENTO_OK);
    momento_client_free(c);
    assert_int_equal(held.total, 1);
    assert_int_equal(tu_counter_errors(&held, MOMENTO_ERR_CANCELLED), 1);
    assert_int_equal(freed.total, 5);
    assert_int_equal(tu_counter_errors(&freed, MOMENTO_ERR_CANCELLED), 5);
    usleep(100 * 1000);
    assert_int_equal(freed.total, 5);
    assert_int_equal(timed.total, 1);
    assert_int_equal(cancelled.total, 1);
    tu_counter_destroy(&held);
    tu_counter_destroy(&timed);
    tu_counter_destroy(&cancelled);
    tu_counter_destroy(&freed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_config_refusals),
        cmocka_unit_test(test_retry_none),
        cmocka_unit_test(test_retry_server_cancelled),
        cmocka_unit_test(test_retry_exponential),
        cmocka_unit_test(test_retry_deadline_exceeded),
        cmocka_unit_test(test_max_message_bytes),
        cmocka_unit_test(test_client_headers),
        cmocka_unit_test(test_read_concern),
        cmocka_unit_test(test_connection_renewal),
        cmocka_unit_test(test_stuck_channel_replaced),
        cmocka_unit_test(test_max_concurrent_queues),
        cmocka_unit_test(test_max_concurrent_endings),
    };
    return cmocka_run_group_tests(tests, tu_fixture_setup_server, tu_fixture_teardown);
}
