/* The conditional writes: SetIf under each of its conditions, and the older
 * SetIfNotExists that official clients of some versions still send. Both
 * answer Stored or NotStored; a write that does not happen is not an
 * error. */
#include "srv_rpc.h"

#include "srv_server.h"

#include "cacheclient.pb-c.h"

/* Does the SetIf condition hold for the current item (NULL = absent)?
 * -1 when the request has no condition. */
static int condition_holds(const CacheClient__SetIfRequest *req, const store_item *it)
{
    switch (req->condition_case) {
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT:
        return it != NULL;
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT_AND_NOT_EQUAL:
        return it && !srv_same_value(it, &req->present_and_not_equal->value_to_check);
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT:
        return it == NULL;
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_EQUAL:
        return it && srv_same_value(it, &req->equal->value_to_check);
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT_OR_EQUAL:
        return !it || srv_same_value(it, &req->absent_or_equal->value_to_check);
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_NOT_EQUAL:
        return !it || !srv_same_value(it, &req->not_equal->value_to_check);
    default:
        return -1;
    }
}

void srv_set_if(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__SetIfRequest *req = (const CacheClient__SetIfRequest *)msg;
    if (!srv_check_item(s, r, &req->cache_key, req->cache_body.len))
        return;
    int64_t now = store_now_ms();
    store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len, now);
    int holds = condition_holds(req, it);
    if (holds < 0) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "SetIf needs a condition");
        return;
    }
    /* A condition on the stored value cannot hold or fail for a collection,
     * which has none: the type mismatch. Presence alone (present, absent)
     * needs no value, and a write replaces the collection, as Set does. */
    bool on_value = req->condition_case != CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT &&
                    req->condition_case != CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT;
    if (it && it->kind != STORE_SCALAR && on_value) {
        srv_reply_wrong_type(r);
        return;
    }
    if (holds)
        srv_set_item(s, c, r, &req->cache_key, &req->cache_body, req->ttl_milliseconds, now);
    if (r->status != GRPC_STATUS_OK)
        return;
    CacheClient__SetIfResponse resp = CACHE_CLIENT____SET_IF_RESPONSE__INIT;
    CacheClient__SetIfResponse__Stored stored = CACHE_CLIENT____SET_IF_RESPONSE____STORED__INIT;
    CacheClient__SetIfResponse__NotStored not_stored =
        CACHE_CLIENT____SET_IF_RESPONSE____NOT_STORED__INIT;
    if (holds) {
        resp.result_case = CACHE_CLIENT____SET_IF_RESPONSE__RESULT_STORED;
        resp.stored = &stored;
    } else {
        resp.result_case = CACHE_CLIENT____SET_IF_RESPONSE__RESULT_NOT_STORED;
        resp.not_stored = &not_stored;
    }
    srv_reply_add(r, &resp.base);
}

void srv_set_if_not_exists(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                           srv_reply *r)
{
    const CacheClient__SetIfNotExistsRequest *req = (const CacheClient__SetIfNotExistsRequest *)msg;
    if (!srv_check_item(s, r, &req->cache_key, req->cache_body.len))
        return;
    int64_t now = store_now_ms();
    store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len, now);
    if (!it)
        srv_set_item(s, c, r, &req->cache_key, &req->cache_body, req->ttl_milliseconds, now);
    if (r->status != GRPC_STATUS_OK)
        return;
    CacheClient__SetIfNotExistsResponse resp = CACHE_CLIENT____SET_IF_NOT_EXISTS_RESPONSE__INIT;
    CacheClient__SetIfNotExistsResponse__Stored stored =
        CACHE_CLIENT____SET_IF_NOT_EXISTS_RESPONSE____STORED__INIT;
    CacheClient__SetIfNotExistsResponse__NotStored not_stored =
        CACHE_CLIENT____SET_IF_NOT_EXISTS_RESPONSE____NOT_STORED__INIT;
    if (!it) {
        resp.result_case = CACHE_CLIENT____SET_IF_NOT_EXISTS_RESPONSE__RESULT_STORED;
        resp.stored = &stored;
    } else {
        resp.result_case = CACHE_CLIENT____SET_IF_NOT_EXISTS_RESPONSE__RESULT_NOT_STORED;
        resp.not_stored = &not_stored;
    }
    srv_reply_add(r, &resp.base);
}
