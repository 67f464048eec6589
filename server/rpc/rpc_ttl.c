/* The TTL RPCs: ItemGetTtl, and UpdateTtl's increase, decrease and
 * overwrite. An item that never expires reports UINT64_MAX ms left
 * (docs/protocol.md "Limits"). */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"

#include "cacheclient.pb-c.h"

/* Milliseconds left, with "never expires" as the largest value. */
static uint64_t remaining_ms(const store_item *it, int64_t now)
{
    return it->expires_ms == 0 ? UINT64_MAX : (uint64_t)(it->expires_ms - now);
}

void srv_item_get_ttl(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__ItemGetTtlRequest *req = (const CacheClient__ItemGetTtlRequest *)msg;
    if (!srv_check_key(r, &req->cache_key))
        return;
    int64_t now = store_now_ms();
    store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len, now);
    CacheClient__ItemGetTtlResponse resp = CACHE_CLIENT____ITEM_GET_TTL_RESPONSE__INIT;
    CacheClient__ItemGetTtlResponse__Found found =
        CACHE_CLIENT____ITEM_GET_TTL_RESPONSE____FOUND__INIT;
    CacheClient__ItemGetTtlResponse__Missing missing =
        CACHE_CLIENT____ITEM_GET_TTL_RESPONSE____MISSING__INIT;
    if (it) {
        found.remaining_ttl_millis = remaining_ms(it, now);
        resp.result_case = CACHE_CLIENT____ITEM_GET_TTL_RESPONSE__RESULT_FOUND;
        resp.found = &found;
    } else {
        resp.result_case = CACHE_CLIENT____ITEM_GET_TTL_RESPONSE__RESULT_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}

/* The TTL a mode asks for; 0 when there is no mode. */
static uint64_t requested_ttl(const CacheClient__UpdateTtlRequest *req)
{
    switch (req->update_ttl_case) {
    case CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_INCREASE_TO_MILLISECONDS:
        return req->increase_to_milliseconds;
    case CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_DECREASE_TO_MILLISECONDS:
        return req->decrease_to_milliseconds;
    case CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_OVERWRITE_TO_MILLISECONDS:
        return req->overwrite_to_milliseconds;
    default:
        return 0;
    }
}

/* Increase and decrease apply only when they would lengthen or shorten the
 * time left (Set), otherwise NotSet; a missing item is Missing. A TTL of 0
 * is refused in every mode, whether or not the item exists: on a write 0
 * means "never expires", which no update may turn an item into (decrease
 * and overwrite would, and increase to 0 can never be an increase, so all
 * three answer alike). The Go SDK and libmomento refuse a TTL update of 0
 * before sending it. */
void srv_update_ttl(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__UpdateTtlRequest *req = (const CacheClient__UpdateTtlRequest *)msg;
    if (!srv_check_key(r, &req->cache_key))
        return;
    if (req->update_ttl_case != CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL__NOT_SET &&
        requested_ttl(req) == 0) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "the TTL of an update must be at least 1 millisecond");
        return;
    }
    int64_t now = store_now_ms();
    store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len, now);
    CacheClient__UpdateTtlResponse resp = CACHE_CLIENT____UPDATE_TTL_RESPONSE__INIT;
    CacheClient__UpdateTtlResponse__Set set = CACHE_CLIENT____UPDATE_TTL_RESPONSE____SET__INIT;
    CacheClient__UpdateTtlResponse__NotSet not_set =
        CACHE_CLIENT____UPDATE_TTL_RESPONSE____NOT_SET__INIT;
    CacheClient__UpdateTtlResponse__Missing missing =
        CACHE_CLIENT____UPDATE_TTL_RESPONSE____MISSING__INIT;
    int applied = -1; /* -1 missing, 0 not set, 1 set */
    uint64_t target = 0;
    if (it) {
        uint64_t left = remaining_ms(it, now);
        switch (req->update_ttl_case) {
        case CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_INCREASE_TO_MILLISECONDS:
            target = req->increase_to_milliseconds;
            applied = target > left;
            break;
        case CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_DECREASE_TO_MILLISECONDS:
            target = req->decrease_to_milliseconds;
            applied = target < left;
            break;
        case CACHE_CLIENT____UPDATE_TTL_REQUEST__UPDATE_TTL_OVERWRITE_TO_MILLISECONDS:
            target = req->overwrite_to_milliseconds;
            applied = 1;
            break;
        default:
            srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                            "UpdateTtl needs increase, decrease or overwrite");
            return;
        }
        /* Past what the clock can hold: never expires, as on a write. */
        if (applied == 1)
            it->expires_ms = target > (uint64_t)(INT64_MAX - now) ? 0 : now + (int64_t)target;
    }
    if (applied == 1) {
        resp.result_case = CACHE_CLIENT____UPDATE_TTL_RESPONSE__RESULT_SET;
        resp.set = &set;
    } else if (applied == 0) {
        resp.result_case = CACHE_CLIENT____UPDATE_TTL_RESPONSE__RESULT_NOT_SET;
        resp.not_set = &not_set;
    } else {
        resp.result_case = CACHE_CLIENT____UPDATE_TTL_RESPONSE__RESULT_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}
