/* A key/value RPC on the wire and back, as the layers above send it: the
 * raw senders of a Get, Set or Delete (arguments checked by the caller, no
 * batching: the batcher's own sends, and what it does not take), and the
 * decoders of the five replies the layers read, Get, Set, Delete and their
 * batches. They sit below the batcher and the coalescer, which send
 * through them, so that the public functions of op_kv.c and op_batch.c
 * can reach the batcher without a circle. */
#include "layers/kv_send.h"

#include "base/alloc.h"
#include "base/wire.h"
#include "codec/compress.h"
#include "engine/client.h"

#include "cacheclient.pb-c.h"

#include <stdlib.h>

/* _GetResponse, the hottest reply, is read straight off the wire: the value
 * a callback sees points into the received message. */
MOMENTO__DECODER(get)
{
    const uint8_t *p = GRPC_SLICE_START_PTR(msgs[0]);
    const uint8_t *end = p + GRPC_SLICE_LENGTH(msgs[0]);
    uint64_t result = 0;
    const uint8_t *body = NULL;
    size_t body_len = 0;
    while (p < end) {
        unsigned field, type;
        if (!momento__wire_tag(&p, end, &field, &type))
            return MOMENTO_ERR_BAD_RESPONSE;
        if (field == 1 && type == 0) { /* ECacheResult result */
            if (!momento__wire_varint(&p, end, &result))
                return MOMENTO_ERR_BAD_RESPONSE;
        } else if (field == 2 && type == 2) { /* bytes cache_body: last one wins */
            if (!momento__wire_bytes(&p, end, &body, &body_len))
                return MOMENTO_ERR_BAD_RESPONSE;
        } else if (field == 0 || !momento__wire_skip(&p, end, type)) {
            return MOMENTO_ERR_BAD_RESPONSE;
        }
    }
    if (result == 2) { /* Hit */
        r->outcome = MOMENTO_OUTCOME_HIT;
        r->value = body ? body : (const uint8_t *)"";
        r->value_len = body_len;
        /* A compressed value is returned decompressed (compress.c). */
        int rc = momento__decompress_hit(scratch, &r->value, &r->value_len, &scratch->message);
        if (rc != MOMENTO_OK)
            return rc;
    } else if (result == 3) { /* Miss */
        r->outcome = MOMENTO_OUTCOME_MISS;
    } else {
        return MOMENTO_ERR_BAD_RESPONSE;
    }
    return MOMENTO_OK;
}

MOMENTO__EMPTY_DECODER(set, MOMENTO_OUTCOME_SUCCESS)

MOMENTO__EMPTY_DECODER(delete, MOMENTO_OUTCOME_SUCCESS)

/* An item the server answered with neither Hit nor Miss (a get) nor Ok (a
 * set): that item's own error, the others unharmed. Momento's stream
 * carries a per-item `result` and `message`; the official JS SDK
 * (cache-data-client.ts, sendGetBatch / sendSetBatch) turns any other
 * result into that item's UnknownError with the message, so this does too
 * (docs/batching.md "One key's failure"). */
static void item_error(momento_result *it, int result, const char *message)
{
    it->error = MOMENTO_ERR_UNKNOWN;
    it->outcome = MOMENTO_OUTCOME_ERROR;
    it->message = message && *message ? message
                  : result == CACHE_CLIENT__ECACHE_RESULT__Invalid
                      ? "the server answered this item with an invalid result"
                      : "the server answered this item with an unexpected result";
}

/* A GetBatch's or SetBatch's reply: every message unpacked as a response
 * message of RPC `m` (into scratch->msgs), each made its key's item by
 * `item`, the whole a result of n items (allocated in scratch->mem), in
 * order. */
static int decode_batch(momento_result *r, momento__rpc_id m, const grpc_slice *msgs, size_t n,
                        momento__scratch *scratch,
                        void (*item)(momento_result *it, const ProtobufCMessage *msg,
                                     momento__scratch *scratch))
{
    scratch->msgs = momento__calloc(n + 1, sizeof(*scratch->msgs));
    momento_result *items = momento__calloc(n + 1, sizeof(*items));
    scratch->mem = items;
    if (!scratch->msgs || !items)
        return MOMENTO_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) {
        scratch->msgs[i] = protobuf_c_message_unpack(momento__rpcs[m].response, NULL,
                                                     GRPC_SLICE_LENGTH(msgs[i]),
                                                     GRPC_SLICE_START_PTR(msgs[i]));
        if (!scratch->msgs[i])
            return MOMENTO_ERR_BAD_RESPONSE;
        scratch->n_msgs++;
        items[i].grpc_status = 0;
        items[i].message = "";
    }
    for (size_t i = 0; i < n; i++)
        item(&items[i], scratch->msgs[i], scratch);
    r->items = items;
    r->n_items = n;
    r->outcome = MOMENTO_OUTCOME_SUCCESS;
    return MOMENTO_OK;
}

static void get_item(momento_result *it, const ProtobufCMessage *msg, momento__scratch *scratch)
{
    const CacheClient__GetResponse *m = (const CacheClient__GetResponse *)msg;
    if (m->result == CACHE_CLIENT__ECACHE_RESULT__Hit) {
        it->outcome = MOMENTO_OUTCOME_HIT;
        it->value = m->cache_body.data;
        it->value_len = m->cache_body.len;
        /* A compressed value is returned decompressed (compress.c); one
         * that fails fails its own item only, so that one bad value does
         * not fail a batcher's unrelated gets. */
        const char *why = NULL;
        int drc = momento__decompress_hit(scratch, &it->value, &it->value_len, &why);
        if (drc != MOMENTO_OK) {
            it->error = drc;
            it->outcome = MOMENTO_OUTCOME_ERROR;
            it->message = why ? why : momento_strerror(drc);
            it->value = NULL;
            it->value_len = 0;
        }
    } else if (m->result == CACHE_CLIENT__ECACHE_RESULT__Miss) {
        it->outcome = MOMENTO_OUTCOME_MISS;
    } else {
        item_error(it, m->result, m->message);
    }
}

static void set_item(momento_result *it, const ProtobufCMessage *msg, momento__scratch *scratch)
{
    (void)scratch;
    const CacheClient__SetResponse *m = (const CacheClient__SetResponse *)msg;
    if (m->result == CACHE_CLIENT__ECACHE_RESULT__Ok)
        it->outcome = MOMENTO_OUTCOME_SUCCESS;
    else
        item_error(it, m->result, m->message);
}

MOMENTO__DECODER(get_batch)
{
    return decode_batch(r, MOMENTO__RPC_GET_BATCH, msgs, n_msgs, scratch, get_item);
}

MOMENTO__DECODER(set_batch)
{
    return decode_batch(r, MOMENTO__RPC_SET_BATCH, msgs, n_msgs, scratch, set_item);
}

int momento__send_get(momento_client *c, const char *cache, const void *key, size_t key_len,
                      const momento__call_opts *opts, momento_callback cb, void *userdata)
{
    CacheClient__GetRequest req = CACHE_CLIENT____GET_REQUEST__INIT;
    req.cache_key = momento__bytes(key, key_len);
    return momento__call_start_with(c, MOMENTO__RPC_GET, momento__decode_get, cache, &req.base,
                                    opts, cb, userdata);
}

int momento__send_set(momento_client *c, const char *cache, const void *key, size_t key_len,
                      const void *value, size_t value_len, uint64_t ttl_ms,
                      const momento__call_opts *opts, momento_callback cb, void *userdata)
{
    uint64_t ttl = momento__effective_ttl(&c->cfg, ttl_ms);
    CacheClient__SetRequest req = CACHE_CLIENT____SET_REQUEST__INIT;
    req.cache_key = momento__bytes(key, key_len);
    req.cache_body = momento__bytes(value, value_len);
    req.ttl_milliseconds = ttl;
    return momento__call_start_with(c, MOMENTO__RPC_SET, momento__decode_set, cache, &req.base,
                                    opts, cb, userdata);
}

int momento__send_delete(momento_client *c, const char *cache, const void *key, size_t key_len,
                         const momento__call_opts *opts, momento_callback cb, void *userdata)
{
    CacheClient__DeleteRequest req = CACHE_CLIENT____DELETE_REQUEST__INIT;
    req.cache_key = momento__bytes(key, key_len);
    return momento__call_start_with(c, MOMENTO__RPC_DELETE, momento__decode_delete, cache,
                                    &req.base, opts, cb, userdata);
}

int momento__send_batch(momento_client *c, bool set, const char *cache, size_t n,
                        void (*at)(const void *src, size_t i, momento__batch_item *out),
                        const void *src, const momento__call_opts *opts, momento_callback cb,
                        void *userdata)
{
    momento__call_opts one_per_key = *opts;
    one_per_key.expect_msgs = n;
    size_t item_size = set ? sizeof(CacheClient__SetRequest) : sizeof(CacheClient__GetRequest);
    uint8_t *items = momento__malloc(n * item_size);
    void **ptrs = momento__malloc(n * sizeof(*ptrs));
    int rc = MOMENTO_ERR_NO_MEMORY;
    if (items && ptrs) {
        for (size_t i = 0; i < n; i++) {
            momento__batch_item it;
            at(src, i, &it);
            if (set) {
                CacheClient__SetRequest *s = (CacheClient__SetRequest *)(items + i * item_size);
                cache_client____set_request__init(s);
                s->cache_key = momento__bytes(it.key, it.key_len);
                s->cache_body = momento__bytes(it.value, it.value_len);
                s->ttl_milliseconds = it.ttl_ms;
                ptrs[i] = s;
            } else {
                CacheClient__GetRequest *g = (CacheClient__GetRequest *)(items + i * item_size);
                cache_client____get_request__init(g);
                g->cache_key = momento__bytes(it.key, it.key_len);
                ptrs[i] = g;
            }
        }
        if (set) {
            CacheClient__SetBatchRequest req = CACHE_CLIENT____SET_BATCH_REQUEST__INIT;
            req.n_items = n;
            req.items = (CacheClient__SetRequest **)ptrs;
            rc = momento__call_start_with(c, MOMENTO__RPC_SET_BATCH, momento__decode_set_batch,
                                          cache, &req.base, &one_per_key, cb, userdata);
        } else {
            CacheClient__GetBatchRequest req = CACHE_CLIENT____GET_BATCH_REQUEST__INIT;
            req.n_items = n;
            req.items = (CacheClient__GetRequest **)ptrs;
            rc = momento__call_start_with(c, MOMENTO__RPC_GET_BATCH, momento__decode_get_batch,
                                          cache, &req.base, &one_per_key, cb, userdata);
        }
    }
    free(items); /* packed at submit */
    free(ptrs);
    return rc;
}
