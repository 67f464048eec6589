/* The method table: each RPC's path, plane and retry class as PROTOCOL.md
 * states them ("Retries in official clients": only idempotent RPCs are
 * retried; SetIf, Increment and UpdateTtl never). */
#include "internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static void test_retry_classification(void **state)
{
    (void)state;
    static const struct {
        momento__method m;
        const char *path;
        bool idempotent;
        bool streaming;
    } want[] = {
        {MOMENTO__M_GET, "/cache_client.Scs/Get", true, false},
        {MOMENTO__M_SET, "/cache_client.Scs/Set", true, false},
        {MOMENTO__M_DELETE, "/cache_client.Scs/Delete", true, false},
        {MOMENTO__M_KEYS_EXIST, "/cache_client.Scs/KeysExist", true, false},
        {MOMENTO__M_ITEM_GET_TTL, "/cache_client.Scs/ItemGetTtl", true, false},
        {MOMENTO__M_GET_BATCH, "/cache_client.Scs/GetBatch", true, true},
        {MOMENTO__M_SET_BATCH, "/cache_client.Scs/SetBatch", true, true},
        {MOMENTO__M_SET_IF, "/cache_client.Scs/SetIf", false, false},
        {MOMENTO__M_INCREMENT, "/cache_client.Scs/Increment", false, false},
        {MOMENTO__M_UPDATE_TTL, "/cache_client.Scs/UpdateTtl", false, false},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const momento__method_info *info = &momento__methods[want[i].m];
        assert_string_equal(info->path, want[i].path);
        assert_int_equal(info->idempotent, want[i].idempotent);
        assert_int_equal(info->streaming, want[i].streaming);
        assert_true(info->cache_header && info->auth_header && !info->control);
    }
}

static void test_every_method_is_complete(void **state)
{
    (void)state;
    for (int m = 0; m < MOMENTO__M_COUNT; m++) {
        const momento__method_info *info = &momento__methods[m];
        assert_non_null(info->path);
        assert_non_null(info->decode);
        for (int k = 0; k < m; k++)
            assert_string_not_equal(info->path, momento__methods[k].path);
        /* Control-plane calls go to the control channel without `cache`. */
        if (strncmp(info->path, "/control_client.", 16) == 0)
            assert_true(info->control && !info->cache_header && info->auth_header);
    }
    /* Ping carries no token, like the official clients'. */
    assert_false(momento__methods[MOMENTO__M_PING].auth_header);
    assert_true(momento__methods[MOMENTO__M_CREATE_CACHE].already_exists_ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_classification),
        cmocka_unit_test(test_every_method_is_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
