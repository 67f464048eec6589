/* The control plane (create, delete, flush and list caches) and ping:
 * requests about the service rather than about items. */
#include "ops/op.h"

#include "base/alloc.h"
#include "engine/respond.h"
#include "model/metrics.h"

#include "cacheping.pb-c.h"
#include "controlclient.pb-c.h"

#include <stdlib.h>
#include <string.h>

MOMENTO__EMPTY_DECODER(ping, MOMENTO_OUTCOME_SUCCESS)

MOMENTO__EMPTY_DECODER(create_cache, MOMENTO_OUTCOME_CREATED)

MOMENTO__EMPTY_DECODER(delete_cache, MOMENTO_OUTCOME_SUCCESS)

MOMENTO__EMPTY_DECODER(flush_cache, MOMENTO_OUTCOME_SUCCESS)

MOMENTO__DECODER(list_caches)
{
    MOMENTO__UNPACK_ONE(ControlClient__ListCachesResponse, LIST_CACHES);
    /* This page's names, pointing into the message, and their limits, in one
     * block; list_page_done() copies what it keeps. */
    const char **names = momento__malloc((m->n_cache + 1) * sizeof(*names) +
                                         m->n_cache * sizeof(momento_cache_limits));
    if (!names)
        return MOMENTO_ERR_NO_MEMORY;
    scratch->mem = names;
    momento_cache_limits *limits = (momento_cache_limits *)(names + m->n_cache + 1);
    for (size_t i = 0; i < m->n_cache; i++) {
        const ControlClient__Cache *e = m->cache[i];
        names[i] = e->cache_name ? e->cache_name : "";
        limits[i] = (momento_cache_limits){0};
        if (e->cache_limits) {
            limits[i].max_traffic_rate = e->cache_limits->max_traffic_rate;
            limits[i].max_throughput_kbps = e->cache_limits->max_throughput_kbps;
            limits[i].max_item_size_kb = e->cache_limits->max_item_size_kb;
            limits[i].max_ttl_seconds = e->cache_limits->max_ttl_seconds;
        }
        if (e->topic_limits) {
            limits[i].max_publish_rate = e->topic_limits->max_publish_rate;
            limits[i].max_subscription_count = e->topic_limits->max_subscription_count;
            limits[i].max_publish_message_size_kb = e->topic_limits->max_publish_message_size_kb;
        }
    }
    r->n_caches = m->n_cache;
    r->caches = names;
    r->cache_limits = limits;
    r->next_token = m->next_token;
    r->outcome = MOMENTO_OUTCOME_SUCCESS;
    return MOMENTO_OK;
}

int momento_ping(momento_client *c, const momento_request_options *opts, momento_callback cb,
                 void *userdata)
{
    MOMENTO__CHECK(momento__check_request(c, opts, cb));
    CacheClient__PingRequest req = CACHE_CLIENT____PING_REQUEST__INIT;
    return momento__call_start(c, MOMENTO__RPC_PING, momento__decode_ping, NULL, &req.base, opts,
                               cb, userdata);
}

int momento_ping_sync(momento_client *c, const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_ping(c, opts, MOMENTO__SYNC_CB));
}

/* CreateCache, DeleteCache and FlushCache share one request shape: a cache
 * name at field 1. The three request types are distinct protobuf-c
 * descriptors, so each is filled through its own init. */
static int cache_name_call(momento_client *c, momento__rpc_id m, momento__decode_fn decode,
                           const char *cache, const momento_request_options *opts,
                           momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_cache_request(c, cache, opts, cb));
    /* Flushed or deleted, the cache's keys all change at once: the near
     * cache drops its entries of it, and tells other clients so. */
    if (m != MOMENTO__RPC_CREATE_CACHE)
        momento__client_note_flush(c, cache);
    union {
        ControlClient__CreateCacheRequest create;
        ControlClient__DeleteCacheRequest del;
        ControlClient__FlushCacheRequest flush;
    } req;
    ProtobufCMessage *msg;
    if (m == MOMENTO__RPC_CREATE_CACHE) {
        control_client____create_cache_request__init(&req.create);
        req.create.cache_name = (char *)cache;
        msg = &req.create.base;
    } else if (m == MOMENTO__RPC_DELETE_CACHE) {
        control_client____delete_cache_request__init(&req.del);
        req.del.cache_name = (char *)cache;
        msg = &req.del.base;
    } else {
        control_client____flush_cache_request__init(&req.flush);
        req.flush.cache_name = (char *)cache;
        msg = &req.flush.base;
    }
    return momento__call_start(c, m, decode, NULL, msg, opts, cb, userdata);
}

int momento_create_cache(momento_client *c, const char *cache, const momento_request_options *opts,
                         momento_callback cb, void *userdata)
{
    return cache_name_call(c, MOMENTO__RPC_CREATE_CACHE, momento__decode_create_cache, cache, opts,
                           cb, userdata);
}

int momento_create_cache_sync(momento_client *c, const char *cache,
                              const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_create_cache(c, cache, opts, MOMENTO__SYNC_CB));
}

int momento_delete_cache(momento_client *c, const char *cache, const momento_request_options *opts,
                         momento_callback cb, void *userdata)
{
    return cache_name_call(c, MOMENTO__RPC_DELETE_CACHE, momento__decode_delete_cache, cache, opts,
                           cb, userdata);
}

int momento_delete_cache_sync(momento_client *c, const char *cache,
                              const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_delete_cache(c, cache, opts, MOMENTO__SYNC_CB));
}

int momento_flush_cache(momento_client *c, const char *cache, const momento_request_options *opts,
                        momento_callback cb, void *userdata)
{
    return cache_name_call(c, MOMENTO__RPC_FLUSH_CACHE, momento__decode_flush_cache, cache, opts,
                           cb, userdata);
}

int momento_flush_cache_sync(momento_client *c, const char *cache,
                             const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_flush_cache(c, cache, opts, MOMENTO__SYNC_CB));
}

/* ListCaches may be paged. The user's request becomes a chain of page calls
 * whose names are gathered here; the user's callback runs once, at the end,
 * with all of them (or with the first error). The whole listing has one
 * deadline, the first page's, and a server whose tokens repeat or never end
 * cannot keep it going: a token equal to the previous one, or more than
 * LIST_MAX_PAGES pages, ends it with MOMENTO_ERR_BAD_RESPONSE. */
#define LIST_MAX_PAGES 1000

typedef struct list_state {
    momento__compound op; /* the first page's deadline and the token, for every page */
    char *token;        /* the token that asked for the page in flight */
    size_t pages;
    char **names;
    momento_cache_limits *limits; /* beside names, as many */
    size_t n, cap;
} list_state;

static void list_finish(list_state *st, const momento_result *r)
{
    momento_result out = *r;
    out.next_token = NULL;
    if (r->error == MOMENTO_OK) {
        out.caches = (const char *const *)st->names;
        out.cache_limits = st->limits;
        out.n_caches = st->n;
    } else {
        out.caches = NULL;
        out.cache_limits = NULL;
        out.n_caches = 0;
    }
    /* One report for the listing, however many pages it took. */
    momento__compound_answer(&st->op, MOMENTO__RPC_LIST_CACHES, &out);
    for (size_t i = 0; i < st->n; i++)
        free(st->names[i]);
    free(st->names);
    free(st->limits);
    free(st->token);
    free(st);
}

static int list_page(list_state *st, const char *token);

/* Keeps this page's names; 0 or NO_MEMORY. */
static int list_keep(list_state *st, const momento_result *r)
{
    for (size_t i = 0; i < r->n_caches; i++) {
        if (st->n == st->cap) {
            size_t cap = st->cap ? st->cap * 2 : 16;
            char **grown = momento__realloc(st->names, cap * sizeof(*grown));
            if (!grown)
                return MOMENTO_ERR_NO_MEMORY;
            st->names = grown;
            momento_cache_limits *more = momento__realloc(st->limits, cap * sizeof(*more));
            if (!more)
                return MOMENTO_ERR_NO_MEMORY;
            st->limits = more;
            st->cap = cap;
        }
        st->limits[st->n] = r->cache_limits ? r->cache_limits[i] : (momento_cache_limits){0};
        size_t len = strlen(r->caches[i]) + 1;
        st->names[st->n] = momento__malloc(len);
        if (!st->names[st->n])
            return MOMENTO_ERR_NO_MEMORY;
        memcpy(st->names[st->n++], r->caches[i], len);
    }
    return MOMENTO_OK;
}

static void list_page_done(const momento_result *r, void *userdata)
{
    list_state *st = userdata;
    if (r->error != MOMENTO_OK) {
        list_finish(st, r);
        return;
    }
    int err = list_keep(st, r);
    const char *why = "listing caches stopped part-way";
    const char *next = r->next_token;
    if (err == MOMENTO_OK && next && *next) {
        if (st->token && strcmp(st->token, next) == 0) {
            err = MOMENTO_ERR_BAD_RESPONSE;
            why = "the server answered a ListCaches page with the token that asked for it";
        } else if (st->pages >= LIST_MAX_PAGES) {
            err = MOMENTO_ERR_BAD_RESPONSE;
            why = "the server's ListCaches reply ran past 1000 pages";
        } else {
            err = list_page(st, next);
            if (err == MOMENTO_OK)
                return;
        }
    }
    if (err == MOMENTO_OK) {
        list_finish(st, r);
        return;
    }
    momento_result failed;
    momento__result_local_error(&failed, err == MOMENTO_ERR_CLOSED ? MOMENTO_ERR_CANCELLED : err,
                                why);
    list_finish(st, &failed);
}

static int list_page(list_state *st, const char *token)
{
    if (token) {
        size_t len = strlen(token) + 1;
        char *copy = momento__malloc(len);
        if (!copy)
            return MOMENTO_ERR_NO_MEMORY;
        memcpy(copy, token, len);
        free(st->token);
        st->token = copy;
    }
    st->pages++;
    ControlClient__ListCachesRequest req = CONTROL_CLIENT____LIST_CACHES_REQUEST__INIT;
    req.next_token = token ? st->token : "";
    return momento__call_start_with(st->op.client, MOMENTO__RPC_LIST_CACHES,
                                    momento__decode_list_caches, NULL, &req.base, &st->op.opts,
                                    list_page_done, st);
}

int momento_list_caches(momento_client *c, const momento_request_options *opts, momento_callback cb,
                        void *userdata)
{
    MOMENTO__CHECK(momento__check_request(c, opts, cb));
    list_state *st = momento__calloc(1, sizeof(*st));
    if (!st)
        return MOMENTO_ERR_NO_MEMORY;
    /* The listing is one request, however many pages: every page within
     * the first's deadline, reported and answered by list_finish(). */
    momento__compound_begin(&st->op, c, opts, cb, userdata);
    int rc = list_page(st, NULL);
    if (rc != MOMENTO_OK) {
        momento__compound_refused(&st->op);
        free(st);
    }
    return rc;
}

int momento_list_caches_sync(momento_client *c, const momento_request_options *opts,
                             momento_result **ret)
{
    MOMENTO__SYNC(momento_list_caches(c, opts, MOMENTO__SYNC_CB));
}
