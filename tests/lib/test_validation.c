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
    assert_int_equal(momento_credentials_local(&creds, "127.0.0.1:1"), MOMENTO_OK);
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

    REFUSED(momento_get(NULL, "c", "k", 1, NULL, cb, NULL));
    REFUSED(momento_get(client, NULL, "k", 1, NULL, cb, NULL));
    REFUSED(momento_get(client, "", "k", 1, NULL, cb, NULL));
    REFUSED(momento_get(client, long_name, "k", 1, NULL, cb, NULL));
    REFUSED(momento_get(client, "bad\xff", "k", 1, NULL, cb, NULL));       /* invalid UTF-8 */
    REFUSED(momento_get(client, "\xc0\xaf", "k", 1, NULL, cb, NULL));      /* overlong */
    REFUSED(momento_get(client, "tab\tname", "k", 1, NULL, cb, NULL));     /* control char */
    REFUSED(momento_get(client, "c", NULL, 1, NULL, cb, NULL));
    REFUSED(momento_get(client, "c", "k", 0, NULL, cb, NULL));
    REFUSED(momento_get(client, "c", "k", 1, NULL, NULL, NULL));

    REFUSED(momento_set(client, "c", "k", 0, "v", 1, 0, NULL, cb, NULL));
    REFUSED(momento_set(client, "c", "k", 1, NULL, 1, 0, NULL, cb, NULL));
    REFUSED(momento_set(client, "c", huge, 1, huge, big, 0, NULL, cb, NULL)); /* key+value > 5 MiB */
    /* Its reason says that nothing went out. */
    assert_non_null(strstr(momento_refusal_reason(), "over Momento's item limit"));
    assert_non_null(strstr(momento_refusal_reason(), "not sent"));
    assert_null(strstr(momento_refusal_reason(), "sent anyway"));
    REFUSED(momento_set(client, "c", huge, big + 1, "v", 1, 0, NULL, cb, NULL));
    REFUSED(momento_set(client, "c", "k", 1, "v", 1, (uint64_t)INT64_MAX + 1, NULL, cb, NULL));
    REFUSED(momento_set(client, "c", "k", 1, "v", SIZE_MAX, 0, NULL, cb, NULL));
    REFUSED(momento_delete(client, "c", "", 0, NULL, cb, NULL));
    REFUSED(momento_delete(client, "", "k", 1, NULL, cb, NULL));

    REFUSED(momento_create_cache(client, "", NULL, cb, NULL));
    REFUSED(momento_create_cache(client, NULL, NULL, cb, NULL));
    REFUSED(momento_delete_cache(client, long_name, NULL, cb, NULL));
    REFUSED(momento_flush_cache(client, "x", NULL, NULL, NULL));
    REFUSED(momento_list_caches(NULL, NULL, cb, NULL));
    REFUSED(momento_list_caches(client, NULL, NULL, NULL));
    REFUSED(momento_ping(client, NULL, NULL, NULL));

    /* The largest legal item is accepted (it will fail to connect, which
     * proves it was sent — and then it must call back exactly once). */
    assert_int_equal(momento_set(client, "c", huge, 1, huge, big - 1, 0, NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(momento_client_wait_idle(client, 5000), MOMENTO_OK);
    assert_int_equal(atomic_load(&callbacks), 1);
    assert_int_equal(momento_client_in_flight(client), 0);
    free(huge);
}

/* A refused blocking call sets *r to an error result that says why. */
static void assert_refusal(momento_result **r, int err)
{
    assert_non_null(*r);
    assert_int_equal(momento_result_error(*r), err);
    assert_int_equal(momento_result_outcome(*r), MOMENTO_OUTCOME_ERROR);
    assert_true(strlen(momento_result_message(*r)) > 0);
    assert_string_not_equal(momento_result_message(*r), momento_strerror(err));
    assert_string_equal(momento_result_message(*r), momento_refusal_reason());
    momento_result_free(*r);
    *r = NULL;
}

static void test_sync_refusals(void **state)
{
    (void)state;
    momento_result *r = (momento_result *)0x1;
    REFUSED(momento_get_sync(client, "", "k", 1, NULL, &r));
    assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    r = (momento_result *)0x1;
    REFUSED(momento_set_sync(client, "c", NULL, 0, "v", 1, 0, NULL, &r));
    assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    REFUSED(momento_delete_sync(NULL, "c", "k", 1, NULL, &r));
    REFUSED(momento_create_cache_sync(client, "", NULL, &r));
    assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    REFUSED(momento_delete_cache_sync(client, NULL, NULL, &r));
    assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    REFUSED(momento_flush_cache_sync(client, "", NULL, NULL));
    REFUSED(momento_list_caches_sync(NULL, NULL, &r));
    REFUSED(momento_ping_sync(NULL, NULL, NULL));
    REFUSED(momento_client_new(NULL, NULL, NULL));
    momento_client *c = (momento_client *)0x1;
    REFUSED(momento_client_new(&c, NULL, NULL));
    assert_ptr_equal(c, (momento_client *)0x1);
}

static void test_scalar_and_batch_refusals(void **state)
{
    (void)state;
    const void *keys[2] = {"a", "b"};
    size_t lens[2] = {1, 1}, zero[2] = {1, 0};
    const void *vals[2] = {"x", "y"};
    size_t vlens[2] = {1, 1};
    momento_condition conds[] = {MOMENTO_IF_ABSENT, MOMENTO_IF_EQUAL};
    for (size_t i = 0; i < 2; i++) {
        REFUSED(momento_set_if(NULL, "c", "k", 1, "v", 1, 0, conds[i], "x", 1, NULL, cb, NULL));
        REFUSED(momento_set_if(client, "", "k", 1, "v", 1, 0, conds[i], "x", 1, NULL, cb, NULL));
        REFUSED(momento_set_if(client, "c", NULL, 1, "v", 1, 0, conds[i], "x", 1, NULL, cb, NULL));
        REFUSED(momento_set_if(client, "c", "k", 1, NULL, 1, 0, conds[i], "x", 1, NULL, cb, NULL));
        REFUSED(momento_set_if(client, "c", "k", 1, "v", 1, 0, conds[i], "x", 1, NULL, NULL, NULL));
    }
    REFUSED(momento_set_if(client, "c", "k", 1, "v", 1, 0, (momento_condition)0, NULL, 0, NULL, cb, NULL));
    REFUSED(momento_set_if_equal(client, "c", "k", 1, "v", 1, 0, NULL, 5, NULL, cb, NULL));
    REFUSED(momento_set_if_absent(client, "c\xff", "k", 1, "v", 1, 0, NULL, cb, NULL));
    REFUSED(momento_set_if_not_exists(client, "c", "", 0, "v", 1, 0, NULL, cb, NULL));
    REFUSED(momento_set_if_present(client, "c", "k", 1, "v", 1, (uint64_t)INT64_MAX + 1, NULL, cb, NULL));
    REFUSED(momento_set_if_not_equal(client, "c", "k", 1, "v", 1, 0, NULL, 1, NULL, cb, NULL));
    REFUSED(momento_set_if_present_and_not_equal(client, NULL, "k", 1, "v", 1, 0, "x", 1, NULL, cb, NULL));
    REFUSED(momento_set_if_absent_or_equal(client, "c", "k", 1, "v", 1, 0, "x", 1, NULL, NULL, NULL));
    REFUSED(momento_increment(client, "c", "", 0, 1, 0, NULL, cb, NULL));
    REFUSED(momento_increment(client, "c", "k", 1, 1, (uint64_t)INT64_MAX + 1, NULL, cb, NULL));
    REFUSED(momento_key_exists(client, "c", NULL, 0, NULL, cb, NULL));
    REFUSED(momento_keys_exist(client, "c", NULL, lens, 2, NULL, cb, NULL));
    REFUSED(momento_keys_exist(client, "c", keys, NULL, 2, NULL, cb, NULL));
    REFUSED(momento_keys_exist(client, "c", keys, lens, 0, NULL, cb, NULL));
    REFUSED(momento_keys_exist(client, "c", keys, zero, 2, NULL, cb, NULL));
    REFUSED(momento_item_get_ttl(client, NULL, "k", 1, NULL, cb, NULL));
    REFUSED(momento_update_ttl(client, "c", "k", 1, 0, NULL, cb, NULL));
    REFUSED(momento_increase_ttl(client, "c", "k", 1, (uint64_t)INT64_MAX + 1, NULL, cb, NULL));
    REFUSED(momento_decrease_ttl(client, "c", "", 0, 5, NULL, cb, NULL));
    REFUSED(momento_get_batch(client, "c", keys, lens, 0, NULL, cb, NULL));
    REFUSED(momento_get_batch(client, "c", keys, zero, 2, NULL, cb, NULL));
    REFUSED(momento_get_batch(client, "", keys, lens, 2, NULL, cb, NULL));
    REFUSED(momento_set_batch(client, "c", keys, lens, NULL, vlens, 2, 0, NULL, cb, NULL));
    REFUSED(momento_set_batch(client, "c", keys, lens, vals, NULL, 2, 0, NULL, cb, NULL));
    REFUSED(momento_set_batch(client, "c", keys, lens, vals, vlens, 2, (uint64_t)INT64_MAX + 1, NULL, cb, NULL));
    /* A batch whose request would pass the message limit. */
    size_t n = 11;
    const void **bk = calloc(n, sizeof(*bk));
    size_t *bkl = calloc(n, sizeof(*bkl));
    const void **bv = calloc(n, sizeof(*bv));
    size_t *bvl = calloc(n, sizeof(*bvl));
    char *big = calloc(1, MOMENTO_MAX_ITEM_BYTES);
    for (size_t i = 0; i < n; i++) {
        bk[i] = "k";
        bkl[i] = 1;
        bv[i] = big;
        bvl[i] = MOMENTO_MAX_ITEM_BYTES - 1;
    }
    REFUSED(momento_set_batch(client, "c", bk, bkl, bv, bvl, n, 0, NULL, cb, NULL));
    free(bk);
    free(bkl);
    free(bv);
    free(bvl);
    free(big);
    REFUSED(momento_set_if_sync(client, "", "k", 1, "v", 1, 0, MOMENTO_IF_ABSENT, NULL, 0, NULL, NULL));
    REFUSED(momento_get_batch_sync(client, "c", keys, lens, 0, NULL, NULL));
    REFUSED(momento_keys_exist_sync(NULL, "c", keys, lens, 2, NULL, NULL));
}

static void test_config_and_local_refusals(void **state)
{
    (void)state;
    REFUSED(momento_config_set_retries(NULL, 3));
    REFUSED(momento_config_set_retry_fixed_timeout(NULL, 3, 100, 100));
    REFUSED(momento_config_set_tls_roots_file(NULL, "/x"));
    REFUSED(momento_config_set_eager_connect(NULL, 1));
    REFUSED(momento_config_set_keepalive(NULL, 1, 1));
    REFUSED(momento_config_set_num_channels(NULL, 1));
    REFUSED(momento_config_set_default_ttl_ms(NULL, 1));
    momento_credentials *c = NULL;
    REFUSED(momento_credentials_from_api_key(NULL, "k", NULL));
    REFUSED(momento_credentials_from_api_key(&c, NULL, NULL));
    REFUSED(momento_credentials_with_endpoints(&c, NULL, "a:1", "a:1"));
    REFUSED(momento_credentials_with_endpoints(&c, "", "a:0", "a:1"));
    REFUSED(momento_credentials_with_endpoints(&c, "", "a:1", "a"));
    REFUSED(momento_credentials_from_env(NULL));
    assert_null(c);
    assert_string_equal(momento_credentials_cache_endpoint(NULL), "");
    assert_int_equal(momento_credentials_uses_tls(NULL), 0);
    momento_result *r = (momento_result *)0x1;
    REFUSED(momento_create_cache_sync(client, "bad\x01name", NULL, &r));
    assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_result_attempts(NULL), 0);
    assert_int_equal(momento_result_int(NULL), 0);
    assert_int_equal(momento_result_ttl_ms(NULL), 0);
    assert_int_equal(momento_result_exists(NULL, 0), -1);
    assert_int_equal(momento_result_exists_count(NULL), 0);
    assert_null(momento_result_item(NULL, 0));
    assert_int_equal(momento_result_item_count(NULL), 0);
    momento_set_log_callback(NULL, NULL);
}

/* The enums of the options' fields and setters are int-sized, so the
 * struct's layout is the one it had with `int` fields. */
_Static_assert(sizeof(momento_read_concern) == sizeof(int), "read concern is int-sized");
_Static_assert(sizeof(momento_compression) == sizeof(int), "compression is int-sized");

/* The initializers name only `size`: every other field is 0, and the
 * compound-literal form passes options the library accepts as they are. */
static void test_options_initializers(void **state)
{
    (void)state;
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT, zero;
    memset(&zero, 0, sizeof(zero));
    zero.size = sizeof(zero);
    assert_int_equal(o.size, sizeof(momento_request_options));
    assert_memory_equal(&o, &zero, sizeof(o));
    momento_subscribe_options so = MOMENTO_SUBSCRIBE_OPTIONS_INIT;
    assert_int_equal(so.size, sizeof(momento_subscribe_options));
    assert_int_equal(so.resume_at_sequence_number + so.flags + so.idle_timeout_ms, 0);
    assert_int_equal(MOMENTO_SUBSCRIBE_OPTIONS(.flags = 1)->flags, 1);

    const momento_request_options *p = MOMENTO_REQUEST_OPTIONS(.timeout_ms = 250);
    assert_int_equal(p->size, sizeof(momento_request_options));
    assert_int_equal(p->timeout_ms, 250);
    assert_null(p->cancel);
    /* Refused for the field it sets, not for its size. */
    REFUSED(momento_get(client, "c", "k", 1, MOMENTO_REQUEST_OPTIONS(.timeout_ms = 86400001u), cb,
                        NULL));
    assert_non_null(strstr(momento_refusal_reason(), "timeout_ms"));
    REFUSED(momento_get(client, "c", "k", 1,
                        MOMENTO_REQUEST_OPTIONS(.read_concern = (momento_read_concern)7), cb, NULL));
    assert_non_null(strstr(momento_refusal_reason(), "read_concern"));
    REFUSED(momento_set(client, "c", "k", 1, "v", 1, 0,
                        MOMENTO_REQUEST_OPTIONS(.compression = (momento_compression)-1), cb, NULL));
    assert_non_null(strstr(momento_refusal_reason(), "compression"));

    /* The setters take the enums, and refuse what is not one of them. */
    momento_config *cfg;
    assert_int_equal(momento_config_new(&cfg), MOMENTO_OK);
    assert_int_equal(momento_config_read_concern(cfg), MOMENTO_READ_BALANCED);
    assert_int_equal(momento_config_set_read_concern(cfg, MOMENTO_READ_CONSISTENT), MOMENTO_OK);
    assert_int_equal(momento_config_read_concern(cfg), MOMENTO_READ_CONSISTENT);
    REFUSED(momento_config_set_read_concern(cfg, MOMENTO_READ_CONCERN_DEFAULT));
    REFUSED(momento_config_set_read_concern(cfg, (momento_read_concern)-1));
    assert_int_equal(momento_config_read_concern(cfg), MOMENTO_READ_CONSISTENT);
    assert_int_equal(momento_config_read_concern(NULL), MOMENTO_READ_CONCERN_DEFAULT);
    assert_int_equal(momento_config_set_compression(cfg, MOMENTO_COMPRESS_ZSTD, 3), MOMENTO_OK);
    REFUSED(momento_config_set_compression(cfg, (momento_compression)-1, 0));
    REFUSED(momento_config_set_compression(cfg, (momento_compression)4, 0));
    momento_config_free(cfg);
}

/* NULL where a result or client goes: refused or ignored. Every result
 * accessor's answer for NULL is test_result.c's test_null_result. */
static void test_null_result_and_client(void **state)
{
    (void)state;
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
        cmocka_unit_test(test_scalar_and_batch_refusals),
        cmocka_unit_test(test_config_and_local_refusals),
        cmocka_unit_test(test_options_initializers),
        cmocka_unit_test(test_null_result_and_client),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    if (atomic_load(&callbacks) != 1)
        return 1; /* a refused request called back */
    return rc;
}
