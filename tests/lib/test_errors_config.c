/* The error enum, the gRPC status mapping of every code in docs/protocol.md, and
 * config validation. */
#include "momento/momento.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static void test_status_mapping(void **state)
{
    (void)state;
    static const struct {
        int status;
        int err;
        const char *name;
    } table[] = {
        {0, MOMENTO_OK, "OK"},
        {1, MOMENTO_ERR_CANCELLED, "CANCELLED_ERROR"},
        {2, MOMENTO_ERR_UNKNOWN_SERVICE, "UNKNOWN_SERVICE_ERROR"},
        {3, MOMENTO_ERR_INVALID_ARGUMENT, "INVALID_ARGUMENT_ERROR"},
        {4, MOMENTO_ERR_TIMEOUT, "TIMEOUT_ERROR"},
        {5, MOMENTO_ERR_CACHE_NOT_FOUND, "CACHE_NOT_FOUND_ERROR"},
        {6, MOMENTO_ERR_ALREADY_EXISTS, "ALREADY_EXISTS_ERROR"},
        {7, MOMENTO_ERR_PERMISSION, "PERMISSION_ERROR"},
        {8, MOMENTO_ERR_LIMIT_EXCEEDED, "LIMIT_EXCEEDED_ERROR"},
        {9, MOMENTO_ERR_FAILED_PRECONDITION, "FAILED_PRECONDITION_ERROR"},
        {10, MOMENTO_ERR_INTERNAL_SERVER, "INTERNAL_SERVER_ERROR"},
        {11, MOMENTO_ERR_BAD_REQUEST, "BAD_REQUEST_ERROR"},
        {12, MOMENTO_ERR_BAD_REQUEST, "BAD_REQUEST_ERROR"},
        {13, MOMENTO_ERR_INTERNAL_SERVER, "INTERNAL_SERVER_ERROR"},
        {14, MOMENTO_ERR_SERVER_UNAVAILABLE, "SERVER_UNAVAILABLE"},
        {15, MOMENTO_ERR_INTERNAL_SERVER, "INTERNAL_SERVER_ERROR"},
        {16, MOMENTO_ERR_AUTHENTICATION, "AUTHENTICATION_ERROR"},
        {17, MOMENTO_ERR_UNKNOWN, "UNKNOWN_ERROR"},
        {-1, MOMENTO_ERR_UNKNOWN, "UNKNOWN_ERROR"},
        {1000, MOMENTO_ERR_UNKNOWN, "UNKNOWN_ERROR"},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        int err = momento_error_from_grpc_status(table[i].status);
        assert_int_equal(err, table[i].err);
        assert_string_equal(momento_error_name(err), table[i].name);
    }
}

static void test_strerror(void **state)
{
    (void)state;
    /* Every code has its own text, distinct from the fallback. */
    const char *fallback = momento_strerror(12345);
    for (int e = 0; e >= -14; e--) {
        assert_non_null(momento_strerror(e));
        assert_string_not_equal(momento_strerror(e), fallback);
    }
    for (int e = -30; e >= -33; e--)
        assert_string_not_equal(momento_strerror(e), fallback);
    assert_string_not_equal(momento_strerror(MOMENTO_ERR_TIMEOUT),
                            momento_strerror(MOMENTO_ERR_CANCELLED));
}

/* The library's version is the header's (this test is built with both),
 * and the three numbers, the string and MOMENTO_VERSION_NUM agree. */
static void test_version(void **state)
{
    (void)state;
    assert_non_null(momento_version());
    assert_string_equal(momento_version(), MOMENTO_VERSION_STRING);
    char expect[32];
    snprintf(expect, sizeof(expect), "%d.%d.%d", MOMENTO_VERSION_MAJOR, MOMENTO_VERSION_MINOR,
             MOMENTO_VERSION_PATCH);
    assert_string_equal(momento_version(), expect);
    assert_int_equal(MOMENTO_VERSION_NUM, (MOMENTO_VERSION_MAJOR << 16) |
                                              (MOMENTO_VERSION_MINOR << 8) | MOMENTO_VERSION_PATCH);
    assert_true(MOMENTO_VERSION_NUM >= 0x000200); /* request options came with 0.2.0 */
}

static void test_config(void **state)
{
    (void)state;
    momento_config *cfg = NULL;
    assert_int_equal(momento_config_new(NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_new(&cfg), MOMENTO_OK);
    assert_int_equal(momento_config_timeout_ms(cfg), 5000);
    assert_int_equal(momento_config_num_channels(cfg), 1);
    assert_true(momento_config_default_ttl_ms(cfg) > 0);

    assert_int_equal(momento_config_set_timeout_ms(cfg, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_timeout_ms(cfg, 86400001u), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_timeout_ms(cfg), 5000); /* unchanged by a refusal */
    assert_int_equal(momento_config_set_timeout_ms(cfg, 1100), MOMENTO_OK);
    assert_int_equal(momento_config_timeout_ms(cfg), 1100);

    assert_int_equal(momento_config_set_default_ttl_ms(cfg, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_default_ttl_ms(cfg, (uint64_t)INT64_MAX + 1),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_default_ttl_ms(cfg, 1234), MOMENTO_OK);
    assert_int_equal(momento_config_default_ttl_ms(cfg), 1234);

    assert_int_equal(momento_config_set_num_channels(cfg, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_num_channels(cfg, 65), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_num_channels(cfg, 4), MOMENTO_OK);
    assert_int_equal(momento_config_num_channels(cfg), 4);

    assert_int_equal(momento_config_set_keepalive(cfg, 5000, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_keepalive(cfg, 0, 0), MOMENTO_OK);
    assert_int_equal(momento_config_set_eager_connect(cfg, 86400001u), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_eager_connect(cfg, 30000), MOMENTO_OK);

    assert_int_equal(momento_config_set_timeout_ms(NULL, 10), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_timeout_ms(NULL), 0);
    momento_config_free(cfg);
    momento_config_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_mapping),
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
