/* The batch RPCs, answered as server streams: GetBatch (one _GetResponse
 * per key, in order) and SetBatch (one _SetResponse per item). A batch with
 * one bad item is rejected whole, before anything is stored or sent
 * (docs/protocol.md "Errors momento-local returns"). */
#include "srv_rpc.h"

#include "srv_server.h"

#include "cacheclient.pb-c.h"

void srv_get_batch(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__GetBatchRequest *req = (const CacheClient__GetBatchRequest *)msg;
    bool ok = true;
    for (size_t i = 0; ok && i < req->n_items; i++)
        ok = srv_check_key(r, &req->items[i]->cache_key);
    int64_t now = store_now_ms();
    for (size_t i = 0; ok && i < req->n_items; i++) {
        const ProtobufCBinaryData *key = &req->items[i]->cache_key;
        ok = srv_reply_get(r, store_get(&s->store, c, key->data, key->len, now)) == 0;
    }
}

void srv_set_batch(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__SetBatchRequest *req = (const CacheClient__SetBatchRequest *)msg;
    bool ok = true;
    for (size_t i = 0; ok && i < req->n_items; i++)
        ok = srv_check_item(s, r, &req->items[i]->cache_key, req->items[i]->cache_body.len);
    int64_t now = store_now_ms();
    for (size_t i = 0; ok && i < req->n_items; i++) {
        const CacheClient__SetRequest *item = req->items[i];
        srv_set_item(s, c, r, &item->cache_key, &item->cache_body, item->ttl_milliseconds, now);
        ok = r->status == GRPC_STATUS_OK;
        if (ok) {
            CacheClient__SetResponse resp = CACHE_CLIENT____SET_RESPONSE__INIT;
            resp.result = CACHE_CLIENT__ECACHE_RESULT__Ok;
            ok = srv_reply_add(r, &resp.base) == 0;
        }
    }
}
