/* From a call that passed the server's checks to its handler: the cache
 * the `cache` header names (a topic RPC's request names it in its body,
 * `cache_name`), the request decoded by the table's descriptor, the
 * handler the table names. The checks come in the order that
 * docs/protocol.md "Errors momento-local returns" lists them. */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"
#include "core/srv_turns.h"

#include <string.h>

/* A request this big is decoded and freed without the turn
 * (srv_let_go()): protobuf-c takes ~150 ms for a 5 MB one of tiny
 * elements, all of which other calls would wait. */
#define LET_GO_BYTES (64u * 1024u)

static srv_handler *const handlers[MOMENTO__RPC_COUNT] = {
#define MOMENTO_RPC(ID, fn, ...) [MOMENTO__RPC_##ID] = srv_##fn,
#define MOMENTO_RPC_SERVER_ONLY(ID, fn, ...) [MOMENTO__RPC_##ID] = srv_##fn,
#include "methods.def"
#undef MOMENTO_RPC
#undef MOMENTO_RPC_SERVER_ONLY
};

/* The cache a call names, or NULL with the error reply set; `missing`
 * is the message for no name at all. */
static store_cache *named_cache(momento_local *s, const char *cache, size_t len,
                                const char *missing, srv_reply *r)
{
    if (!cache || len == 0) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "%s", missing);
        return NULL;
    }
    /* Refused rather than cut short: a longer header would otherwise reach
     * the cache its first 255 bytes name. */
    if (!srv_check_cache_name(r, cache, len))
        return NULL;
    store_cache *c = store_find_cache(&s->store, cache, len);
    if (!c) {
        /* No `err` trailer: official SDKs read `store_not_found` as a
         * missing *store* (another Momento product), not a cache. */
        srv_reply_error(r, GRPC_STATUS_NOT_FOUND, NULL, "cache not found: %.*s",
                        (int)(len > 100 ? 100 : len), cache);
    }
    return c;
}

void srv_dispatch(momento_local *s, momento__rpc_id m, const char *cache, size_t cache_len,
                  const uint8_t *body, size_t len, srv_reply *r)
{
    store_cache *c = NULL;
    /* First, as a service refuses what it will not read: nothing of a
     * request over the size limit is looked at, not even its cache. */
    if (!srv_check_request_size(s, r, len))
        return;
    if (momento__rpcs[m].plane == MOMENTO__PLANE_DATA &&
        !(c = named_cache(s, cache, cache_len, "request is missing the cache header", r)))
        return;
    /* Every call naming a cache that a flush or deletion is emptying
     * waits for it (srv_turns.h). */
    if (c && c->whole) {
        r->deferred = true;
        return;
    }
    /* The batches read their items in place (rpc_batch.c): unpacking would
     * allocate and copy each. Their requests hold no string field, so
     * srv_check_strings() has nothing to refuse in them. */
    if (m == MOMENTO__RPC_GET_BATCH || m == MOMENTO__RPC_SET_BATCH) {
        srv_work_request(c, NULL, momento__rpcs[m].request, body, len);
        if (srv_work_blocked())
            r->deferred = true;
        else
            (m == MOMENTO__RPC_GET_BATCH ? srv_get_batch_wire : srv_set_batch_wire)(s, c, body,
                                                                                   len, r);
        srv_work_request_done();
        return;
    }
    bool big = len >= LET_GO_BYTES;
    bool let = big && srv_let_go();
    ProtobufCMessage *req = NULL;
    if (srv_check_strings(r, momento__rpcs[m].request, body, len)) {
        req = protobuf_c_message_unpack(momento__rpcs[m].request, NULL, len, body);
        if (!req)
            srv_reply_undecodable(r);
    }
    if (let) {
        srv_take_back();
        /* Without the turn, a DeleteCache may have freed the cache (or
         * a flush begun): it is looked up again. */
        if (c && !(c = named_cache(s, cache, cache_len, "", r))) {
            if (req)
                protobuf_c_message_free_unpacked(req, NULL);
            return;
        }
        if (c && c->whole)
            r->deferred = true;
    }
    if (!req || r->deferred) {
        if (req)
            protobuf_c_message_free_unpacked(req, NULL); /* held back: decoded again later */
        return;
    }
    if (momento__rpcs[m].plane == MOMENTO__PLANE_TOPIC) {
        /* Both topic requests have it; protobuf-c decodes an absent one
         * as "". */
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field_by_name(momento__rpcs[m].request, "cache_name");
        const char *name = f ? *(char *const *)((const char *)req + f->offset) : NULL;
        c = named_cache(s, name, name ? strlen(name) : 0, "cache_name must not be empty", r);
        if (c && c->whole)
            r->deferred = true;
    }
    if (!r->deferred && (c || momento__rpcs[m].plane != MOMENTO__PLANE_TOPIC)) {
        srv_work_request(c, req, NULL, NULL, 0);
        if (srv_work_blocked())
            r->deferred = true;
        else
            handlers[m](s, c, req, r);
        /* Its pins stay until the call is answered (srv_work_end()):
         * what waits on them must not overtake it while the request is
         * freed without the turn. */
        srv_work_request_done();
    }
    let = big && srv_let_go();
    protobuf_c_message_free_unpacked(req, NULL);
    if (let)
        srv_take_back();
}
