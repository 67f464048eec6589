/* errors.c past the bare status: the kinds official SDKs read from a reply's
 * `err` trailer and message (not found, client resource exhausted), the
 * limit a LIMIT_EXCEEDED names, and the names and texts of the new codes. */
#include "model/errors.h"
#include "model/result.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static void test_names(void **state)
{
    (void)state;
    static const struct {
        int err;
        const char *name;
    } table[] = {
        {MOMENTO_ERR_CONNECTION, "CONNECTION_ERROR"},
        {MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED, "CLIENT_RESOURCE_EXHAUSTED"},
        {MOMENTO_ERR_NOT_FOUND, "NOT_FOUND_ERROR"},
    };
    const char *fallback = momento_strerror(12345);
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        assert_string_equal(momento_error_name(table[i].err), table[i].name);
        assert_string_not_equal(momento_strerror(table[i].err), fallback);
    }
    /* Old values stay where they were; the new ones take the next free. */
    assert_int_equal(MOMENTO_ERR_UNKNOWN, -14);
    assert_int_equal(MOMENTO_ERR_CONNECTION, -15);
    assert_int_equal(MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED, -16);
    assert_int_equal(MOMENTO_ERR_NOT_FOUND, -17);
    assert_int_equal(MOMENTO_ERR_NO_MEMORY, -30);
    /* Every code from -1 to -17 and -30 to -33 has its own text. */
    for (int a = -1; a >= -33; a--) {
        if (a < -17 && a > -30)
            continue;
        assert_string_not_equal(momento_strerror(a), fallback);
        for (int b = a - 1; b >= -33; b--)
            if (!(b < -17 && b > -30))
                assert_string_not_equal(momento_strerror(a), momento_strerror(b));
    }
    /* The bare status mapping never gives the refined kinds. */
    for (int s = 0; s <= 16; s++) {
        int e = momento_error_from_grpc_status(s);
        assert_true(e != MOMENTO_ERR_NOT_FOUND && e != MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED &&
                    e != MOMENTO_ERR_CONNECTION);
    }
}

static void test_reply_mapping(void **state)
{
    (void)state;
    static const struct {
        int status;
        const char *err;
        const char *message;
        int want;
    } table[] = {
        /* NOT_FOUND: a cache unless the trailer names an item or a store,
         * or (no trailer) the message names a store. */
        {5, NULL, "cache not found: c", MOMENTO_ERR_CACHE_NOT_FOUND},
        {5, NULL, NULL, MOMENTO_ERR_CACHE_NOT_FOUND},
        {5, "item_not_found", "", MOMENTO_ERR_NOT_FOUND},
        {5, "store_not_found", NULL, MOMENTO_ERR_NOT_FOUND},
        {5, "something_else", "Store with name: s doesn't exist", MOMENTO_ERR_CACHE_NOT_FOUND},
        {5, NULL, "Store with name: s doesn't exist", MOMENTO_ERR_NOT_FOUND},
        {5, NULL, "store with name: s", MOMENTO_ERR_CACHE_NOT_FOUND},
        /* RESOURCE_EXHAUSTED: the service's unless gRPC refused a message
         * over this client's own limits (no trailer). */
        {8, "item_size_limit_exceeded", "", MOMENTO_ERR_LIMIT_EXCEEDED},
        {8, NULL, "injected error", MOMENTO_ERR_LIMIT_EXCEEDED},
        {8, NULL, NULL, MOMENTO_ERR_LIMIT_EXCEEDED},
        {8, NULL, "Received message larger than max (11000000 vs. 10485760)",
         MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED},
        {8, NULL, "Sent message larger than max (11000000 vs. 10485760)",
         MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED},
        {8, "request_size_limit_exceeded", "Received message larger than max (1 vs. 0)",
         MOMENTO_ERR_LIMIT_EXCEEDED},
        /* The rest as the bare status maps them, trailer or not. */
        {14, "item_not_found", "failed to connect to all addresses",
         MOMENTO_ERR_SERVER_UNAVAILABLE},
        {3, NULL, "Sent message larger than max", MOMENTO_ERR_INVALID_ARGUMENT},
        {6, "store_already_exists", NULL, MOMENTO_ERR_ALREADY_EXISTS},
        {99, NULL, NULL, MOMENTO_ERR_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        int got = momento__error_from_reply(table[i].status, table[i].err, table[i].message);
        if (got != table[i].want)
            fail_msg("status %d err %s message \"%s\": %s, want %s", table[i].status,
                     table[i].err ? table[i].err : "(none)",
                     table[i].message ? table[i].message : "(none)", momento_error_name(got),
                     momento_error_name(table[i].want));
    }
}

static void test_limit_kinds(void **state)
{
    (void)state;
    static const struct {
        const char *err;
        const char *message;
        momento_limit_kind want;
    } table[] = {
        /* The trailer decides when there is one, whatever the message. */
        {"operations_rate_limit_exceeded", "item size", MOMENTO_LIMIT_OPERATIONS_RATE},
        {"throughput_rate_limit_exceeded", NULL, MOMENTO_LIMIT_THROUGHPUT_RATE},
        {"request_size_limit_exceeded", "", MOMENTO_LIMIT_REQUEST_SIZE},
        {"item_size_limit_exceeded", "element size", MOMENTO_LIMIT_ITEM_SIZE},
        {"element_size_limit_exceeded", NULL, MOMENTO_LIMIT_ELEMENT_SIZE},
        {"topic_subscriptions_limit_exceeded", NULL, MOMENTO_LIMIT_TOPIC_SUBSCRIPTIONS},
        /* A cause the SDKs do not know: unknown, the message not read. */
        {"cache_count_limit_exceeded", "operations", MOMENTO_LIMIT_UNKNOWN},
        {"", "operations", MOMENTO_LIMIT_UNKNOWN},
        /* No trailer: words of the message, in the SDKs' order, any case. */
        {NULL, "Too many SUBSCRIBERS", MOMENTO_LIMIT_TOPIC_SUBSCRIPTIONS},
        {NULL, "operations per second exceeded", MOMENTO_LIMIT_OPERATIONS_RATE},
        {NULL, "Throughput exceeded", MOMENTO_LIMIT_THROUGHPUT_RATE},
        {NULL, "request size 6 MB exceeds the Request Limit", MOMENTO_LIMIT_REQUEST_SIZE},
        {NULL, "Item size too big", MOMENTO_LIMIT_ITEM_SIZE},
        {NULL, "element size too big", MOMENTO_LIMIT_ELEMENT_SIZE},
        {NULL, "subscribers and operations", MOMENTO_LIMIT_TOPIC_SUBSCRIPTIONS},
        {NULL, "item size and element size", MOMENTO_LIMIT_ITEM_SIZE},
        {NULL, "request rate exceeded", MOMENTO_LIMIT_UNKNOWN},
        {NULL, "item  size", MOMENTO_LIMIT_UNKNOWN},
        {NULL, "", MOMENTO_LIMIT_UNKNOWN},
        {NULL, NULL, MOMENTO_LIMIT_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        momento_limit_kind got = momento__limit_kind(table[i].err, table[i].message);
        if (got != table[i].want)
            fail_msg("err %s message \"%s\": %d, want %d",
                     table[i].err ? table[i].err : "(none)",
                     table[i].message ? table[i].message : "(none)", (int)got,
                     (int)table[i].want);
    }
}

static void test_result_limit_kind(void **state)
{
    (void)state;
    assert_int_equal(momento_result_limit_kind(NULL), MOMENTO_LIMIT_NONE);
    momento_result r;
    memset(&r, 0, sizeof(r));
    r.message = "";
    r.error_detail = "item_size_limit_exceeded";
    /* Only a LIMIT_EXCEEDED result has a limit kind, whatever its trailer. */
    r.error = MOMENTO_OK;
    assert_int_equal(momento_result_limit_kind(&r), MOMENTO_LIMIT_NONE);
    r.error = MOMENTO_ERR_CLIENT_RESOURCE_EXHAUSTED;
    assert_int_equal(momento_result_limit_kind(&r), MOMENTO_LIMIT_NONE);
    r.error = MOMENTO_ERR_LIMIT_EXCEEDED;
    assert_int_equal(momento_result_limit_kind(&r), MOMENTO_LIMIT_ITEM_SIZE);
    r.error_detail = NULL;
    r.message = "element size exceeded";
    assert_int_equal(momento_result_limit_kind(&r), MOMENTO_LIMIT_ELEMENT_SIZE);
    r.message = NULL;
    assert_int_equal(momento_result_limit_kind(&r), MOMENTO_LIMIT_UNKNOWN);
    /* A local refusal made before any reply: no trailer, a local message. */
    momento__result_local_error(&r, MOMENTO_ERR_LIMIT_EXCEEDED, NULL);
    assert_int_equal(momento_result_limit_kind(&r), MOMENTO_LIMIT_UNKNOWN);
}

static void test_limit_texts(void **state)
{
    (void)state;
    /* The SDKs' sentences, one per kind, none for NONE or out of range. */
    assert_string_equal(momento_limit_kind_text(MOMENTO_LIMIT_REQUEST_SIZE),
                        "Request size limit exceeded for this account");
    assert_string_equal(momento_limit_kind_text(MOMENTO_LIMIT_OPERATIONS_RATE),
                        "Request rate limit exceeded for this account");
    assert_string_equal(momento_limit_kind_text(MOMENTO_LIMIT_UNKNOWN),
                        "Limit exceeded for this account");
    assert_string_equal(momento_limit_kind_text(MOMENTO_LIMIT_NONE), "");
    assert_string_equal(momento_limit_kind_text((momento_limit_kind)99), "");
    assert_string_equal(momento_limit_kind_text((momento_limit_kind)-1), "");
    for (int k = MOMENTO_LIMIT_UNKNOWN; k <= MOMENTO_LIMIT_TOPIC_SUBSCRIPTIONS; k++) {
        const char *t = momento_limit_kind_text((momento_limit_kind)k);
        assert_true(strlen(t) > 0);
        for (int j = k + 1; j <= MOMENTO_LIMIT_TOPIC_SUBSCRIPTIONS; j++)
            assert_string_not_equal(t, momento_limit_kind_text((momento_limit_kind)j));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_reply_mapping),
        cmocka_unit_test(test_limit_kinds),
        cmocka_unit_test(test_result_limit_kind),
        cmocka_unit_test(test_limit_texts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
