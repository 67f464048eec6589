/* The RPC table: each RPC's path, plane and retry class as docs/protocol.md
 * states them ("Retries": only idempotent RPCs are retried; SetIf,
 * Increment and UpdateTtl never), and a decoder for every RPC the library
 * makes. */
#include "ops/decode.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static void test_retry_classification(void **state)
{
    (void)state;
    static const struct {
        momento__rpc_id m;
        const char *path;
        bool idempotent;
        bool streaming;
    } want[] = {
        {MOMENTO__RPC_GET, "/cache_client.Scs/Get", true, false},
        {MOMENTO__RPC_SET, "/cache_client.Scs/Set", true, false},
        {MOMENTO__RPC_DELETE, "/cache_client.Scs/Delete", true, false},
        {MOMENTO__RPC_KEYS_EXIST, "/cache_client.Scs/KeysExist", true, false},
        {MOMENTO__RPC_ITEM_GET_TTL, "/cache_client.Scs/ItemGetTtl", true, false},
        {MOMENTO__RPC_ITEM_GET_TYPE, "/cache_client.Scs/ItemGetType", true, false},
        {MOMENTO__RPC_GET_BATCH, "/cache_client.Scs/GetBatch", true, true},
        {MOMENTO__RPC_SET_BATCH, "/cache_client.Scs/SetBatch", true, true},
        {MOMENTO__RPC_SET_IF, "/cache_client.Scs/SetIf", false, false},
        {MOMENTO__RPC_GET_WITH_HASH, "/cache_client.Scs/GetWithHash", true, false},
        {MOMENTO__RPC_SET_IF_HASH, "/cache_client.Scs/SetIfHash", false, false},
        {MOMENTO__RPC_INCREMENT, "/cache_client.Scs/Increment", false, false},
        {MOMENTO__RPC_UPDATE_TTL, "/cache_client.Scs/UpdateTtl", false, false},
        /* Erasing by position is not idempotent: a repeat erases others. */
        {MOMENTO__RPC_LIST_ERASE, "/cache_client.Scs/ListErase", false, false},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const momento__rpc *info = &momento__rpcs[want[i].m];
        assert_string_equal(info->path, want[i].path);
        assert_int_equal(info->idempotent, want[i].idempotent);
        assert_int_equal(info->streaming, want[i].streaming);
        /* Data plane: cache + authorization headers, data channel. */
        assert_int_equal(info->plane, MOMENTO__PLANE_DATA);
    }
}

/* Which rows are MOMENTO_RPC (the library sends them) rather than
 * MOMENTO_RPC_SERVER_ONLY. */
static const bool library_sends[MOMENTO__RPC_COUNT] = {
#define MOMENTO_RPC(ID, fn, ...) [MOMENTO__RPC_##ID] = true,
#define MOMENTO_RPC_SERVER_ONLY(ID, fn, ...) [MOMENTO__RPC_##ID] = false,
#include "methods.def"
#undef MOMENTO_RPC
#undef MOMENTO_RPC_SERVER_ONLY
};

static void test_every_method_is_complete(void **state)
{
    (void)state;
    for (int m = 0; m < MOMENTO__RPC_COUNT; m++) {
        const momento__rpc *info = &momento__rpcs[m];
        assert_non_null(info->path);
        assert_non_null(info->name);
        assert_non_null(info->fault_name);
        assert_non_null(info->request);
        assert_non_null(info->response);
        /* A decoder exactly for the RPCs the library sends, and the row
         * says which those are (channel.c registers those alone). */
        assert_int_equal(info->server_only, !library_sends[m]);
        if (library_sends[m])
            assert_non_null(momento__decoders[m]);
        else
            assert_null(momento__decoders[m]);
        for (int k = 0; k < m; k++)
            assert_string_not_equal(info->path, momento__rpcs[k].path);
        /* Control-plane calls go to the control channel without `cache`. */
        if (strncmp(info->path, "/control_client.", 16) == 0)
            assert_int_equal(info->plane, MOMENTO__PLANE_CONTROL);
    }
    /* Exactly SetIfNotExists is momento-local's alone (the library sends
     * SetIf for an absent key); SortedSetUnionStore is sent since
     * momento_sorted_set_union_store(), a write that is never retried; the
     * leaderboard rows since leaderboards.h. */
    int not_sent = 0;
    for (int m = 0; m < MOMENTO__RPC_COUNT; m++)
        if (!library_sends[m])
            not_sent++;
    assert_int_equal(not_sent, 1);
    assert_false(library_sends[MOMENTO__RPC_SET_IF_NOT_EXISTS]);
    /* Leaderboards: the data plane's headers; no SDK retries them. */
    for (int m = MOMENTO__RPC_DELETE_LEADERBOARD; m <= MOMENTO__RPC_GET_COMPETITION_RANK; m++) {
        assert_int_equal(strncmp(momento__rpcs[m].path, "/leaderboard.Leaderboard/", 25), 0);
        assert_int_equal(momento__rpcs[m].plane, MOMENTO__PLANE_DATA);
        assert_false(momento__rpcs[m].idempotent);
        assert_false(momento__rpcs[m].streaming);
        assert_true(library_sends[m]);
    }
    assert_true(library_sends[MOMENTO__RPC_SORTED_SET_UNION_STORE]);
    assert_false(momento__rpcs[MOMENTO__RPC_SORTED_SET_UNION_STORE].idempotent);
    /* Topics: the cache endpoint, the cache named in the body; a publish
     * repeated would be a second item, a subscribe may be made again. */
    assert_string_equal(momento__rpcs[MOMENTO__RPC_TOPIC_PUBLISH].path,
                        "/cache_client.pubsub.Pubsub/Publish");
    assert_string_equal(momento__rpcs[MOMENTO__RPC_TOPIC_SUBSCRIBE].path,
                        "/cache_client.pubsub.Pubsub/Subscribe");
    assert_int_equal(momento__rpcs[MOMENTO__RPC_TOPIC_PUBLISH].plane, MOMENTO__PLANE_TOPIC);
    assert_int_equal(momento__rpcs[MOMENTO__RPC_TOPIC_SUBSCRIBE].plane, MOMENTO__PLANE_TOPIC);
    assert_false(momento__rpcs[MOMENTO__RPC_TOPIC_PUBLISH].idempotent);
    assert_true(momento__rpcs[MOMENTO__RPC_TOPIC_SUBSCRIBE].idempotent);
    assert_true(momento__rpcs[MOMENTO__RPC_TOPIC_SUBSCRIBE].streaming);
    /* Ping carries no token, like the official clients'. */
    assert_int_equal(momento__rpcs[MOMENTO__RPC_PING].plane, MOMENTO__PLANE_PING);
    assert_true(momento__rpcs[MOMENTO__RPC_CREATE_CACHE].already_exists_is_outcome);
    /* API keys: the control endpoint, the caller's key in the body; the
     * SDKs retry neither (a refresh repeated would find its key retired). */
    assert_int_equal(momento__rpcs[MOMENTO__RPC_GENERATE_API_TOKEN].plane, MOMENTO__PLANE_AUTH);
    assert_int_equal(momento__rpcs[MOMENTO__RPC_REFRESH_API_TOKEN].plane, MOMENTO__PLANE_AUTH);
    assert_false(momento__rpcs[MOMENTO__RPC_GENERATE_API_TOKEN].idempotent);
    assert_false(momento__rpcs[MOMENTO__RPC_REFRESH_API_TOKEN].idempotent);
    /* Webhooks: the control plane, and not in the SDKs' retry list. */
    for (int m = MOMENTO__RPC_PUT_WEBHOOK; m <= MOMENTO__RPC_ROTATE_WEBHOOK_SECRET; m++) {
        assert_int_equal(momento__rpcs[m].plane, MOMENTO__PLANE_CONTROL);
        assert_false(momento__rpcs[m].idempotent);
    }
}

/* What a disposable token must grant for each RPC (momento-local's
 * tokens.c reads the row's `.access`), written out here for every row so
 * that a row changed or added without its class fails: reads need a read
 * grant, plain writes a write grant, writes that read (a condition, a
 * returned value: SetIf, Increment, pops, UpdateTtl) read-write, and the
 * control plane, ping and the token service are closed to such a token. */
static void test_token_access_of_every_row(void **state)
{
    (void)state;
    static const struct {
        momento__rpc_id m;
        momento__access access;
    } want[] = {
        {MOMENTO__RPC_GET, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SET, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_DELETE, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_SET_IF, MOMENTO__ACCESS_READ_WRITE},
        {MOMENTO__RPC_SET_IF_NOT_EXISTS, MOMENTO__ACCESS_READ_WRITE},
        {MOMENTO__RPC_INCREMENT, MOMENTO__ACCESS_READ_WRITE},
        {MOMENTO__RPC_KEYS_EXIST, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_ITEM_GET_TTL, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_UPDATE_TTL, MOMENTO__ACCESS_READ_WRITE},
        {MOMENTO__RPC_GET_BATCH, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SET_BATCH, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_PING, MOMENTO__ACCESS_NONE},
        {MOMENTO__RPC_CREATE_CACHE, MOMENTO__ACCESS_NONE},
        {MOMENTO__RPC_DELETE_CACHE, MOMENTO__ACCESS_NONE},
        {MOMENTO__RPC_LIST_CACHES, MOMENTO__ACCESS_NONE},
        {MOMENTO__RPC_FLUSH_CACHE, MOMENTO__ACCESS_NONE},
        {MOMENTO__RPC_ITEM_GET_TYPE, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_DICTIONARY_GET, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_DICTIONARY_FETCH, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_DICTIONARY_SET, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_DICTIONARY_INCREMENT, MOMENTO__ACCESS_READ_WRITE},
        {MOMENTO__RPC_DICTIONARY_DELETE, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_DICTIONARY_LENGTH, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SET_FETCH, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SET_SAMPLE, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SET_UNION, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_SET_DIFFERENCE, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_SET_CONTAINS, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SET_LENGTH, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SET_POP, MOMENTO__ACCESS_READ_WRITE},
        {MOMENTO__RPC_LIST_PUSH_FRONT, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_LIST_PUSH_BACK, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_LIST_POP_FRONT, MOMENTO__ACCESS_READ_WRITE},
        {MOMENTO__RPC_LIST_POP_BACK, MOMENTO__ACCESS_READ_WRITE},
        {MOMENTO__RPC_LIST_ERASE, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_LIST_REMOVE, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_LIST_FETCH, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_LIST_LENGTH, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_LIST_CONCATENATE_FRONT, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_LIST_CONCATENATE_BACK, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_LIST_RETAIN, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_SORTED_SET_PUT, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_SORTED_SET_FETCH, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SORTED_SET_GET_SCORE, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SORTED_SET_REMOVE, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_SORTED_SET_INCREMENT, MOMENTO__ACCESS_READ_WRITE},
        {MOMENTO__RPC_SORTED_SET_GET_RANK, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SORTED_SET_LENGTH, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SORTED_SET_LENGTH_BY_SCORE, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SORTED_SET_UNION_STORE, MOMENTO__ACCESS_READ_WRITE},
        {MOMENTO__RPC_TOPIC_PUBLISH, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_TOPIC_SUBSCRIBE, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_GET_WITH_HASH, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_SET_IF_HASH, MOMENTO__ACCESS_READ_WRITE},
        {MOMENTO__RPC_GENERATE_DISPOSABLE_TOKEN, MOMENTO__ACCESS_NONE},
        {MOMENTO__RPC_GENERATE_API_TOKEN, MOMENTO__ACCESS_NONE},
        {MOMENTO__RPC_REFRESH_API_TOKEN, MOMENTO__ACCESS_NONE},
        {MOMENTO__RPC_DELETE_LEADERBOARD, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_UPSERT_ELEMENTS, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_REMOVE_ELEMENTS, MOMENTO__ACCESS_WRITE},
        {MOMENTO__RPC_GET_LEADERBOARD_LENGTH, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_GET_BY_RANK, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_GET_RANK, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_GET_BY_SCORE, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_GET_COMPETITION_RANK, MOMENTO__ACCESS_READ},
        {MOMENTO__RPC_PUT_WEBHOOK, MOMENTO__ACCESS_NONE},
        {MOMENTO__RPC_DELETE_WEBHOOK, MOMENTO__ACCESS_NONE},
        {MOMENTO__RPC_LIST_WEBHOOKS, MOMENTO__ACCESS_NONE},
        {MOMENTO__RPC_GET_WEBHOOK_SECRET, MOMENTO__ACCESS_NONE},
        {MOMENTO__RPC_ROTATE_WEBHOOK_SECRET, MOMENTO__ACCESS_NONE},
    };
    assert_int_equal(sizeof(want) / sizeof(want[0]), MOMENTO__RPC_COUNT);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        /* In the table's order: each row is listed once. */
        assert_int_equal(want[i].m, (momento__rpc_id)i);
        assert_int_equal(momento__rpcs[want[i].m].access, want[i].access);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_classification),
        cmocka_unit_test(test_every_method_is_complete),
        cmocka_unit_test(test_token_access_of_every_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
