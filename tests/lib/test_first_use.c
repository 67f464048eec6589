/* What a new user tripped over (issue 20), against the local server:
 * refused requests say why (a blocking call's result, any call's
 * momento_refusal_reason()), momento_client_in_flight() counts requests
 * (each coalesced waiter) until their callbacks have returned, and
 * momento_client_wait_idle() waits for them. */
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

/* A blocking set refused for `cache` / `value_len`: its result's message
 * must contain `want`. */
static void refused_set(momento_client *c, const char *cache, size_t value_len, const char *want)
{
    char *value = calloc(1, value_len + 1);
    momento_result *r = NULL;
    assert_int_equal(momento_set_sync(c, cache, "k", 1, value, value_len, 0, NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(r);
    assert_int_equal(momento_result_error(r), MOMENTO_ERR_INVALID_ARGUMENT);
    const char *why = momento_result_message(r);
    if (!strstr(why, want))
        fail_msg("refusal \"%s\" does not mention \"%s\"", why, want);
    momento_result_free(r);
    free(value);
}

static void test_refusals_say_why(void **state)
{
    (void)state;
    momento_client *c = tu_client(tu_fx.server, NULL);
    /* The four the issue names, each distinct. */
    refused_set(c, "", 1, "cache name is empty");
    refused_set(c, "a\tb", 1, "control character (0x09) at byte 1");
    char long_name[300];
    memset(long_name, 'n', 299);
    long_name[299] = '\0';
    refused_set(c, long_name, 1, "299 bytes, over the limit of 255");
    refused_set(c, "c", MOMENTO_MAX_ITEM_BYTES, "5242881 bytes, over Momento's item limit");

    /* An async refusal: the return code, and the reason for this thread. */
    assert_int_equal(momento_get(c, "c", NULL, 1, NULL, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_string_equal(momento_refusal_reason(), "the key is NULL");
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, NULL, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_string_equal(momento_refusal_reason(), "the callback is NULL");
    momento_request_options bad = MOMENTO_REQUEST_OPTIONS_INIT;
    bad.timeout_ms = 86400001u;
    assert_int_equal(momento_get(c, "c", "k", 1, &bad, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "timeout_ms"));

    /* A token already cancelled, and a client being freed, say so too. */
    momento_cancel_token *tok;
    momento_cancel_token_new(&tok);
    momento_cancel(tok);
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.cancel = tok;
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &o, &r), MOMENTO_ERR_CANCELLED);
    assert_non_null(strstr(momento_result_message(r), "cancel token was already cancelled"));
    momento_result_free(r);
    momento_cancel_token_free(tok);

    /* A refusal with nothing specific to add never shows an older one. */
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    momento_client_free(c);
}

/* Counts callbacks; the last one of `expect` notes what in_flight read
 * inside it. */
typedef struct seen {
    tu_counter k;
    momento_client *client;
    size_t in_flight_inside_first;
    bool first;
} seen;

static void seen_cb(const momento_result *r, void *ud)
{
    seen *s = ud;
    if (!s->first) {
        s->first = true;
        s->in_flight_inside_first = momento_client_in_flight(s->client);
    }
    tu_count_cb(r, &s->k);
}

static void test_in_flight_counts_requests(void **state)
{
    (void)state;
    momento_client *c = tu_client(tu_fx.server, NULL);
    momento_coalescer *co = tu_coalescer(c);
    seen s = {.client = c};
    tu_counter_init(&s.k);
    tu_gate *g = tu_gate_close(c);
    /* 1000 coalesced callers share one RPC, but are 1000 requests (and
     * the gate one more). */
    for (int i = 0; i < 1000; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "hot", 3, NULL, seen_cb, &s), MOMENTO_OK);
    assert_int_equal(momento_client_in_flight(c), 1001);
    /* Not done yet: waiting gives up at its timeout. */
    assert_int_equal(momento_client_wait_idle(c, 50), MOMENTO_ERR_TIMEOUT);
    tu_gate_open(g);
    /* Done: every callback has returned, so the count is exactly 0. */
    assert_int_equal(momento_client_wait_idle(c, (uint32_t)TU_MS(10000)), MOMENTO_OK);
    assert_int_equal(momento_client_in_flight(c), 0);
    assert_int_equal(s.k.total, 1000);
    assert_int_equal(s.k.ok, 1000);
    /* A callback sees its own request (and the ones after it) counted. */
    assert_true(s.in_flight_inside_first >= 1);
    /* Idle already: at once. */
    assert_int_equal(momento_client_wait_idle(c, 0), MOMENTO_OK);
    tu_counter_destroy(&s.k);
    momento_coalescer_free(co);
    momento_client_free(c);

    assert_int_equal(momento_client_wait_idle(NULL, 10), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_client_in_flight(NULL), 0);
}

static int deadlock_rc;

static void wait_from_callback(const momento_result *r, void *ud)
{
    (void)r;
    deadlock_rc = momento_client_wait_idle((momento_client *)ud, 10);
}

static void test_wait_idle_from_a_callback(void **state)
{
    (void)state;
    momento_client *c = tu_client(tu_fx.server, NULL);
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, wait_from_callback, c), MOMENTO_OK);
    assert_int_equal(momento_client_wait_idle(c, (uint32_t)TU_MS(5000)), MOMENTO_OK);
    assert_int_equal(deadlock_rc, MOMENTO_ERR_WOULD_DEADLOCK);
    momento_client_free(c);
}

/* Per-request headers reach the server: momento-local's fault injection,
 * driven from the public API. */
static void test_request_headers(void **state)
{
    (void)state;
    momento_client *c = tu_client(tu_fx.server, NULL);
    momento_coalescer *co = tu_coalescer(c);
    momento_header fail_once[] = {{"request-id", "first-use-headers"},
                                  {"return-error", "unavailable"},
                                  {"error-rpcs", "get"},
                                  {"error-count", "1"}};
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.headers = fail_once;
    o.n_headers = 4;
    momento_result *r = NULL;
    /* The first attempt fails as asked; the retry (same headers) succeeds. */
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &o, &r), MOMENTO_OK);
    assert_int_equal(momento_result_attempts(r), 2);
    momento_result_free(r);
    /* Only the requests that carry them. */
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_attempts(r), 1);
    momento_result_free(r);
    momento_header deny[] = {{"return-error", "permission-denied"}};
    o.headers = deny;
    o.n_headers = 1;
    assert_int_equal(momento_get_sync(c, "c", "k", 1, &o, &r), MOMENTO_ERR_PERMISSION);
    momento_result_free(r);
    /* A coalesced request with headers goes alone: its neighbours without
     * them are not failed by its headers. */
    tu_counter k;
    tu_counter_init(&k);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, &o, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 3, (int)TU_MS(5000)), 3);
    assert_int_equal(k.ok, 2);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_PERMISSION), 1);
    tu_counter_destroy(&k);

    /* Refused, each saying why. */
    static const struct {
        momento_header h;
        const char *why;
    } bad[] = {
        {{"authorization", "x"}, "one the library or gRPC sends itself"},
        {{"read-concern", "consistent"}, "one the library or gRPC sends itself"},
        {{"grpc-timeout", "1S"}, "gRPC's"},
        {{"trace-bin", "x"}, "binary"},
        {{"Upper", "x"}, "a-z 0-9"},
        {{"", "x"}, "empty"},
        {{"ok", "line\nbreak"}, "printable ASCII"},
        {{"ok", NULL}, "NULL"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        o.headers = &bad[i].h;
        o.n_headers = 1;
        assert_int_equal(momento_get(c, "c", "k", 1, &o, tu_count_cb, NULL),
                         MOMENTO_ERR_INVALID_ARGUMENT);
        if (!strstr(momento_refusal_reason(), bad[i].why))
            fail_msg("header %zu: \"%s\" does not say \"%s\"", i, momento_refusal_reason(),
                     bad[i].why);
    }
    static momento_header many[MOMENTO_MAX_REQUEST_HEADERS + 1];
    for (size_t i = 0; i <= MOMENTO_MAX_REQUEST_HEADERS; i++)
        many[i] = (momento_header){"x-n", "1"};
    o.headers = many;
    o.n_headers = MOMENTO_MAX_REQUEST_HEADERS + 1;
    assert_int_equal(momento_get(c, "c", "k", 1, &o, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    o.headers = NULL;
    o.n_headers = 1;
    assert_int_equal(momento_get(c, "c", "k", 1, &o, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    momento_coalescer_free(co);
    momento_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_headers),
        cmocka_unit_test(test_refusals_say_why),
        cmocka_unit_test(test_in_flight_counts_requests),
        cmocka_unit_test(test_wait_idle_from_a_callback),
    };
    return cmocka_run_group_tests(tests, tu_fixture_setup_server, tu_fixture_teardown);
}
