/* The control plane (CreateCache, DeleteCache, ListCaches, FlushCache;
 * docs/protocol.md "Control plane") and Ping. */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"
#include "core/srv_turns.h"
#include "core/srv_webhooks.h"

#include "cacheping.pb-c.h"
#include "controlclient.pb-c.h"

#include <stdlib.h>
#include <string.h>

/* protobuf-c decodes an absent string as "", but a NULL is no name too. */
static bool check_name(srv_reply *r, const char *name)
{
    return srv_check_cache_name(r, name, name ? strlen(name) : 0);
}

void srv_create_cache(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const ControlClient__CreateCacheRequest *req = (const ControlClient__CreateCacheRequest *)msg;
    if (!check_name(r, req->cache_name))
        return;
    int rc = store_create_cache(&s->store, req->cache_name);
    if (rc == STORE_EXISTS) {
        srv_reply_error(r, GRPC_STATUS_ALREADY_EXISTS, NULL, "cache already exists");
    } else if (rc < 0) {
        srv_reply_no_memory(r);
    } else {
        ControlClient__CreateCacheResponse resp = CONTROL_CLIENT____CREATE_CACHE_RESPONSE__INIT;
        srv_reply_add(r, &resp.base);
    }
}

/* DeleteCache and FlushCache: empties the named cache (and deletes it,
 * with `drop`), NOT_FOUND when it is not there, else `resp` (an empty
 * message). A big cache is emptied in slices, other calls running between
 * them (srv_turns.h); meanwhile every call naming it waits, and this waits
 * for a long request on its keys to be done. */
static void on_cache(momento_local *s, const char *name, bool drop, const ProtobufCMessage *resp,
                     srv_reply *r)
{
    if (!check_name(r, name))
        return;
    store_cache *c = store_find_cache(&s->store, name, strlen(name));
    if (!c) {
        srv_reply_error(r, GRPC_STATUS_NOT_FOUND, NULL, "cache not found");
        return;
    }
    if (!srv_work_pin_cache(c)) {
        r->deferred = true;
        return;
    }
    if (drop) {
        store_delete_cache(&s->store, name); /* its pin goes with it */
    } else {
        store_flush_cache(&s->store, name);
        srv_work_unpin_cache(c);
    }
    srv_reply_add(r, resp);
}

void srv_delete_cache(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const ControlClient__DeleteCacheRequest *req = (const ControlClient__DeleteCacheRequest *)msg;
    ControlClient__DeleteCacheResponse resp = CONTROL_CLIENT____DELETE_CACHE_RESPONSE__INIT;
    on_cache(s, req->cache_name, true, &resp.base, r);
    /* Momento ends a deleted cache's subscriptions with NOT_FOUND; its
     * topics and webhooks go with it. */
    if (r->status == GRPC_STATUS_OK && !r->deferred) {
        srv_topics_drop_cache(s, req->cache_name);
        srv_webhooks_drop_cache(s, req->cache_name);
    }
}

void srv_flush_cache(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const ControlClient__FlushCacheRequest *req = (const ControlClient__FlushCacheRequest *)msg;
    ControlClient__FlushCacheResponse resp = CONTROL_CLIENT____FLUSH_CACHE_RESPONSE__INIT;
    on_cache(s, req->cache_name, false, &resp.base, r);
    /* Topics without subscribers go, and resume buffers (subscriptions go
     * on): what a flush frees (docs/server.md "Topics"). */
    if (r->status == GRPC_STATUS_OK && !r->deferred)
        srv_topics_flush_cache(s, req->cache_name);
}

static int by_cache_name(const void *a, const void *b)
{
    return strcmp((*(ControlClient__Cache *const *)a)->cache_name,
                  (*(ControlClient__Cache *const *)b)->cache_name);
}

void srv_list_caches(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const ControlClient__ListCachesRequest *req = (const ControlClient__ListCachesRequest *)msg;
    size_t n = HASH_COUNT(s->store.caches);
    ControlClient__Cache *entries = calloc(n + 1, sizeof(*entries));
    ControlClient__Cache **ptrs = calloc(n + 1, sizeof(*ptrs));
    if (!entries || !ptrs) {
        srv_reply_no_memory(r);
        free(entries);
        free(ptrs);
        return;
    }
    /* Limits as Momento reports them for a default cache. */
    ControlClient__CacheLimits limits = CONTROL_CLIENT____CACHE_LIMITS__INIT;
    limits.max_traffic_rate = s->opts.max_rps ? s->opts.max_rps : 100;
    limits.max_throughput_kbps = 1024;
    limits.max_item_size_kb = (uint32_t)(s->opts.max_item_bytes / 1024);
    limits.max_ttl_seconds = 86400;
    ControlClient__TopicLimits topics = CONTROL_CLIENT____TOPIC_LIMITS__INIT;
    topics.max_publish_rate = 100;
    topics.max_subscription_count = 100;
    topics.max_publish_message_size_kb = 100;
    size_t i = 0;
    for (store_cache *it = s->store.caches; it; it = it->hh.next, i++) {
        control_client____cache__init(&entries[i]);
        entries[i].cache_name = it->name;
        entries[i].cache_limits = &limits;
        entries[i].topic_limits = &topics;
        ptrs[i] = &entries[i];
    }
    ControlClient__ListCachesResponse resp = CONTROL_CLIENT____LIST_CACHES_RESPONSE__INIT;
    resp.n_cache = n;
    resp.cache = ptrs;
    resp.next_token = "";
    uint32_t page = s->opts.list_page_size;
    if (page) {
        /* Paged: name order, resuming after the token (the last name of the
         * previous page), so caches created or deleted between pages
         * neither repeat nor shift the rest. */
        qsort(ptrs, n, sizeof(*ptrs), by_cache_name);
        size_t from = 0;
        if (req->next_token && *req->next_token)
            while (from < n && strcmp(ptrs[from]->cache_name, req->next_token) <= 0)
                from++;
        resp.cache = ptrs + from;
        resp.n_cache = n - from < page ? n - from : page;
        if (from + resp.n_cache < n)
            resp.next_token = resp.cache[resp.n_cache - 1]->cache_name;
    }
    srv_reply_add(r, &resp.base);
    free(entries);
    free(ptrs);
}

void srv_ping(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    CacheClient__PingResponse resp = CACHE_CLIENT____PING_RESPONSE__INIT;
    srv_reply_add(r, &resp.base);
}
