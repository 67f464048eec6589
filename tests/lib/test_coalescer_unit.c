/* The coalescer's boundary, without a server: argument refusals send
 * nothing and never call back, the stats ABI copies only what the caller's
 * struct holds, and an unreachable server's failure reaches every waiter. */
#include "momento/coalescer.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static atomic_int calls, unavailable;

static void cb(const momento_result *r, void *ud)
{
    (void)ud;
    if (momento_result_error(r) == MOMENTO_ERR_SERVER_UNAVAILABLE)
        atomic_fetch_add(&unavailable, 1);
    atomic_fetch_add(&calls, 1);
}

static void test_refusals_and_stats_abi(void **state)
{
    (void)state;
    momento_credentials *creds;
    momento_client *client;
    momento_coalescer *co;
    assert_int_equal(momento_credentials_local(&creds, "127.0.0.1:1"), MOMENTO_OK);
    assert_int_equal(momento_client_new(&client, NULL, creds), MOMENTO_OK);
    momento_credentials_free(creds);
    assert_int_equal(momento_coalescer_new(&co, client), MOMENTO_OK);

    assert_int_equal(momento_coalescing_get(co, NULL, "k", 1, NULL, cb, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_coalescing_set(co, "c", "", 0, "v", 1, 0, NULL, cb, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    char *big = calloc(1, MOMENTO_MAX_ITEM_BYTES);
    assert_int_equal(momento_coalescing_set(co, "c", "k", 1, big, MOMENTO_MAX_ITEM_BYTES, 0, NULL, cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    free(big);
    assert_int_equal(momento_coalescing_delete(co, "c", NULL, 1, NULL, cb, NULL), MOMENTO_ERR_INVALID_ARGUMENT);

    momento_coalescer_stats k;
    memset(&k, 0xff, sizeof(k));
    assert_int_equal(momento_coalescer_stats_get(co, &k, sizeof(k)), MOMENTO_OK);
    assert_int_equal(k.get_requests + k.set_requests + k.delete_requests, 0);
    /* An older, shorter struct: only its prefix is written. */
    uint64_t prefix[2] = {7, 7};
    assert_int_equal(momento_coalescer_stats_get(co, (momento_coalescer_stats *)prefix,
                                                 sizeof(uint64_t)),
                     MOMENTO_OK);
    assert_int_equal(prefix[0], 0);
    assert_int_equal(prefix[1], 7);

    /* Ten identical gets to a closed port: each waiter hears the failure. */
    for (int i = 0; i < 10; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "k", 1, NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(momento_client_wait_idle(client, 5000), MOMENTO_OK);
    assert_int_equal(momento_coalescer_stats_get(co, &k, sizeof(k)), MOMENTO_OK);
    assert_int_equal(k.get_requests, 10);
    assert_int_equal(k.keys_in_flight, 0);
    momento_coalescer_free(co);
    /* The free waits for every callback, so none can come after it: a
     * duplicate would have been counted by now. */
    momento_client_free(client);
    assert_int_equal(atomic_load(&calls), 10);
    assert_int_equal(atomic_load(&unavailable), 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_refusals_and_stats_abi)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
