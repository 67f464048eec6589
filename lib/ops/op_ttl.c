/* Item TTLs: read what is left, and update, increase or decrease it. */
#include "ops/op.h"

#include "cacheclient.pb-c.h"

/* Found carries the TTL left (momento_result_ttl_ms()). */
MOMENTO__FOUND_NUMBER_DECODER(item_get_ttl, ITEM_GET_TTL, CacheClient__ItemGetTtlResponse,
                              result_case, CACHE_CLIENT____ITEM_GET_TTL_RESPONSE__RESULT,
                              MOMENTO_OUTCOME_HIT, ttl_ms, remaining_ttl_millis)

MOMENTO__DECODER(update_ttl)
{
    MOMENTO__UNPACK_ONE(CacheClient__UpdateTtlResponse, UPDATE_TTL);
    switch (m->result_case) {
    case CACHE_CLIENT____UPDATE_TTL_RESPONSE__RESULT_SET:
        r->outcome = MOMENTO_OUTCOME_TTL_UPDATED;
        break;
    case CACHE_CLIENT____UPDATE_TTL_RESPONSE__RESULT_NOT_SET:
        r->outcome = MOMENTO_OUTCOME_TTL_NOT_UPDATED;
        break;
    case CACHE_CLIENT____UPDATE_TTL_RESPONSE__RESULT_MISSING:
        r->outcome = MOMENTO_OUTCOME_MISS;
        break;
    default:
        return MOMENTO_ERR_BAD_RESPONSE;
    }
    return MOMENTO_OK;
}

int momento_item_get_ttl(momento_client *c, const char *cache, const void *key, size_t key_len,
                         const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_key_request(c, cache, key, key_len, opts, cb));
    CacheClient__ItemGetTtlRequest req = CACHE_CLIENT____ITEM_GET_TTL_REQUEST__INIT;
    req.cache_key = momento__bytes(key, key_len);
    return momento__call_start(c, MOMENTO__RPC_ITEM_GET_TTL, momento__decode_item_get_ttl, cache,
                               &req.base, opts, cb, userdata);
}

int momento_item_get_ttl_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                              const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_item_get_ttl(c, cache, key, key_len, opts, MOMENTO__SYNC_CB));
}

/* The three updates differ only in which field of the oneof carries the TTL. */
typedef enum ttl_mode {
    TTL_OVERWRITE = CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_OVERWRITE_TO_MILLISECONDS,
    TTL_INCREASE = CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_INCREASE_TO_MILLISECONDS,
    TTL_DECREASE = CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_DECREASE_TO_MILLISECONDS,
} ttl_mode;

static int update_ttl(momento_client *c, const char *cache, const void *key, size_t key_len,
                      uint64_t ttl_ms, ttl_mode mode, const momento_request_options *opts,
                      momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_key_request(c, cache, key, key_len, opts, cb));
    if (ttl_ms == 0) /* an update needs a TTL: 0 does not mean the default here */
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "a TTL update of 0 ms (0 is no default here)");
    MOMENTO__CHECK(momento__check_ttl(ttl_ms));
    CacheClient__UpdateTtlRequest req = CACHE_CLIENT____UPDATE_TTL_REQUEST__INIT;
    req.cache_key = momento__bytes(key, key_len);
    req.update_ttl_case = (CacheClient__UpdateTtlRequest__UpdateTtlCase)mode;
    if (mode == TTL_INCREASE)
        req.increase_to_milliseconds = ttl_ms;
    else if (mode == TTL_DECREASE)
        req.decrease_to_milliseconds = ttl_ms;
    else
        req.overwrite_to_milliseconds = ttl_ms;
    momento__client_note_write(c, NULL, cache, key, key_len); /* read-your-writes */
    return momento__call_start(c, MOMENTO__RPC_UPDATE_TTL, momento__decode_update_ttl, cache,
                               &req.base, opts, cb, userdata);
}

static int update_ttl_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                           uint64_t ttl_ms, ttl_mode mode, const momento_request_options *opts,
                           momento_result **ret)
{
    MOMENTO__SYNC(update_ttl(c, cache, key, key_len, ttl_ms, mode, opts, MOMENTO__SYNC_CB));
}

int momento_update_ttl(momento_client *c, const char *cache, const void *key, size_t key_len,
                       uint64_t ttl_ms, const momento_request_options *opts, momento_callback cb,
                       void *userdata)
{
    return update_ttl(c, cache, key, key_len, ttl_ms, TTL_OVERWRITE, opts, cb, userdata);
}

int momento_update_ttl_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                            uint64_t ttl_ms, const momento_request_options *opts,
                            momento_result **ret)
{
    return update_ttl_sync(c, cache, key, key_len, ttl_ms, TTL_OVERWRITE, opts, ret);
}

int momento_increase_ttl(momento_client *c, const char *cache, const void *key, size_t key_len,
                         uint64_t ttl_ms, const momento_request_options *opts, momento_callback cb,
                         void *userdata)
{
    return update_ttl(c, cache, key, key_len, ttl_ms, TTL_INCREASE, opts, cb, userdata);
}

int momento_increase_ttl_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                              uint64_t ttl_ms, const momento_request_options *opts,
                              momento_result **ret)
{
    return update_ttl_sync(c, cache, key, key_len, ttl_ms, TTL_INCREASE, opts, ret);
}

int momento_decrease_ttl(momento_client *c, const char *cache, const void *key, size_t key_len,
                         uint64_t ttl_ms, const momento_request_options *opts, momento_callback cb,
                         void *userdata)
{
    return update_ttl(c, cache, key, key_len, ttl_ms, TTL_DECREASE, opts, cb, userdata);
}

int momento_decrease_ttl_sync(momento_client *c, const char *cache, const void *key, size_t key_len,
                              uint64_t ttl_ms, const momento_request_options *opts,
                              momento_result **ret)
{
    return update_ttl_sync(c, cache, key, key_len, ttl_ms, TTL_DECREASE, opts, ret);
}
