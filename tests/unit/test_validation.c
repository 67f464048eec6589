/* Argument validation at the public boundary: every bad argument is refused
 * with MOMENTO_ERR_INVALID_ARGUMENT before anything is sent, and no callback
 * ever follows a refusal. The client points at a port nobody listens on, so
 * a request that slipped through would show up as a callback. */
#include "momento/momento.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int callbacks;

static void cb(const momento_result *r, void *ud)
{
    (void)r;
    (void)ud;
    atomic_fetch_add(&callbacks, 1);
}

static momento_client *client;

static int setup(void **state)
{
    (void)state;
    momento_credentials *creds;
    assert_int_equal(momento_credentials_local(&creds, "127.0.0.1:1", NULL), MOMENTO_OK);
    assert_int_equal(momento_client_new(&client, NULL, creds), MOMENTO_OK);
    momento_credentials_free(creds);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    momento_client_free(client);
    return 0;
}

#define REFUSED(expr) assert_int_equal((expr), MOMENTO_ERR_INVALID_ARGUMENT)

static void test_async_refusals(void **state)
{
    (void)state;
    const size_t big = MOMENTO_MAX_ITEM_BYTES;
    char *huge = calloc(1, big + 1);
    char long_name[300];
    memset(long_name, 'c', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';

    REFUSED(momento_get(NULL, "c", "k", 1, cb, NULL));
    REFUSED(momento_get(client, NULL, "k", 1, cb, NULL));
    REFUSED(momento_get(client, "", "k", 1, cb, NULL));
    REFUSED(momento_get(client, long_name, "k", 1, cb, NULL));
    REFUSED(momento_get(client, "bad\xff", "k", 1, cb, NULL));       /* invalid UTF-8 */
    REFUSED(momento_get(client, "\xc0\xaf", "k", 1, cb, NULL));      /* overlong */
    REFUSED(momento_get(client, "tab\tname", "k", 1, cb, NULL));     /* control char */
    REFUSED(momento_get(client, "c", NULL, 1, cb, NULL));
    REFUSED(momento_get(client, "c", "k", 0, cb, NULL));
    REFUSED(momento_get(client, "c", "k", 1, NULL, NULL));

    REFUSED(momento_set(client, "c", "k", 0, "v", 1, 0, cb, NULL));
    REFUSED(momento_set(client, "c", "k", 1, NULL, 1, 0, cb, NULL));
    REFUSED(momento_set(client, "c", huge, 1, huge, big, 0, cb, NULL)); /* key+value > 5 MiB */
    REFUSED(momento_set(client, "c", huge, big + 1, "v", 1, 0, cb, NULL));
    REFUSED(momento_set(client, "c", "k", 1, "v", 1, (uint64_t)INT64_MAX + 1, cb, NULL));
    REFUSED(momento_set(client, "c", "k", 1, "v", SIZE_MAX, 0, cb, NULL));
    REFUSED(momento_delete(client, "c", "", 0, cb, NULL));
    REFUSED(momento_delete(client, "", "k", 1, cb, NULL));

    REFUSED(momento_create_cache(client, "", cb, NULL));
    REFUSED(momento_create_cache(client, NULL, cb, NULL));
    REFUSED(momento_delete_cache(client, long_name, cb, NULL));
    REFUSED(momento_flush_cache(client, "x", NULL, NULL));
    REFUSED(momento_list_caches(NULL, cb, NULL));
    REFUSED(momento_list_caches(client, NULL, NULL));
    REFUSED(momento_ping(client, NULL, NULL));

    /* The largest legal item is accepted (it will fail to connect, which
     * proves it was sent — and then it must call back exactly once). */
    assert_int_equal(momento_set(client, "c", huge, 1, huge, big - 1, 0, cb, NULL), MOMENTO_OK);
    for (int i = 0; i < 500 && atomic_load(&callbacks) < 1; i++)
        usleep(10000);
    assert_int_equal(atomic_load(&callbacks), 1);
    assert_int_equal(momento_client_in_flight(client), 0);
    free(huge);
}

static void test_sync_refusals(void **state)
{
    (void)state;
    momento_result *r = (momento_result *)0x1;
    REFUSED(momento_get_sync(client, "", "k", 1, &r));
    assert_null(r);
    r = (momento_result *)0x1;
    REFUSED(momento_set_sync(client, "c", NULL, 0, "v", 1, 0, &r));
    assert_null(r);
    REFUSED(momento_delete_sync(NULL, "c", "k", 1, &r));
    REFUSED(momento_create_cache_sync(client, "", &r));
    REFUSED(momento_delete_cache_sync(client, NULL, &r));
    REFUSED(momento_flush_cache_sync(client, "", NULL));
    REFUSED(momento_list_caches_sync(NULL, &r));
    REFUSED(momento_ping_sync(NULL, NULL));
    REFUSED(momento_client_new(NULL, NULL, NULL));
    momento_client *c = (momento_client *)0x1;
    REFUSED(momento_client_new(&c, NULL, NULL));
    assert_ptr_equal(c, (momento_client *)0x1);
}

static void test_result_accessors_null_safe(void **state)
{
    (void)state;
    size_t len = 7;
    assert_int_equal(momento_result_error(NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_result_outcome(NULL), MOMENTO_OUTCOME_ERROR);
    assert_int_equal(momento_result_grpc_status(NULL), -1);
    assert_string_equal(momento_result_message(NULL), "");
    assert_null(momento_result_error_detail(NULL));
    assert_int_equal(momento_result_is_hit(NULL), 0);
    assert_null(momento_result_value(NULL, &len));
    assert_int_equal(len, 0);
    assert_int_equal(momento_result_cache_count(NULL), 0);
    assert_null(momento_result_cache_name(NULL, 0));
    momento_result *copy;
    REFUSED(momento_result_dup(NULL, &copy));
    momento_result_free(NULL);
    momento_client_free(NULL);
    assert_int_equal(momento_client_in_flight(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_async_refusals),
        cmocka_unit_test(test_sync_refusals),
        cmocka_unit_test(test_result_accessors_null_safe),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    if (atomic_load(&callbacks) != 1)
        return 1; /* a refused request called back */
    return rc;
}
