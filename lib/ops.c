/* The operations: argument checks, request messages, and the decoders that
 * turn each response into a momento_result. The table below is the one place
 * that says which path, plane and headers each method uses. */
#include "internal.h"

#include "cacheclient.pb-c.h"
#include "cacheping.pb-c.h"
#include "controlclient.pb-c.h"

#include <stdlib.h>
#include <string.h>

/* Set, delete, ping and the control calls carry nothing we need beyond a
 * well-formed message; checking that needs no allocation. */
#define DECODE_EMPTY(fn, outcome_value)                                                            \
    int fn(momento_result *r, const grpc_slice *msgs, size_t n, momento__scratch *scratch)         \
    {                                                                                              \
        (void)n;                                                                                   \
        (void)scratch;                                                                             \
        if (!momento__wire_valid(GRPC_SLICE_START_PTR(msgs[0]), GRPC_SLICE_LENGTH(msgs[0])))       \
            return MOMENTO_ERR_BAD_RESPONSE;                                                       \
        r->outcome = outcome_value;                                                                \
        return MOMENTO_OK;                                                                         \
    }

DECODE_EMPTY(momento__decode_set, MOMENTO_OUTCOME_SUCCESS)
DECODE_EMPTY(momento__decode_delete, MOMENTO_OUTCOME_SUCCESS)
DECODE_EMPTY(momento__decode_ping, MOMENTO_OUTCOME_SUCCESS)
DECODE_EMPTY(momento__decode_create_cache, MOMENTO_OUTCOME_CREATED)
DECODE_EMPTY(momento__decode_delete_cache, MOMENTO_OUTCOME_SUCCESS)
DECODE_EMPTY(momento__decode_flush_cache, MOMENTO_OUTCOME_SUCCESS)

int momento__decode_list_caches(momento_result *r, const grpc_slice *msgs, size_t n,
                                momento__scratch *scratch)
{
    (void)n;
    ControlClient__ListCachesResponse *m = control_client____list_caches_response__unpack(
        NULL, GRPC_SLICE_LENGTH(msgs[0]), GRPC_SLICE_START_PTR(msgs[0]));
    if (!m)
        return MOMENTO_ERR_BAD_RESPONSE;
    scratch->msg = &m->base;
    /* This page's names, pointing into the message; list_page_done() copies
     * the ones it keeps. */
    const char **names = malloc((m->n_cache + 1) * sizeof(*names));
    if (!names)
        return MOMENTO_ERR_NO_MEMORY;
    scratch->mem = names;
    for (size_t i = 0; i < m->n_cache; i++)
        names[i] = m->cache[i]->cache_name ? m->cache[i]->cache_name : "";
    r->n_caches = m->n_cache;
    r->caches = names;
    r->next_token = m->next_token;
    r->outcome = MOMENTO_OUTCOME_SUCCESS;
    return MOMENTO_OK;
}

static int check_client(const momento_client *c, momento_callback cb)
{
    return (c && cb) ? 0 : MOMENTO_ERR_INVALID_ARGUMENT;
}

/* The unchecked senders: arguments were validated by the caller (the public
 * functions below, or the coalescer, which validates once for both). */
int momento__send_get(momento_client *c, const char *cache, const void *key, size_t key_len,
                      momento_callback cb, void *userdata)
{
    CacheClient__GetRequest req = CACHE_CLIENT____GET_REQUEST__INIT;
    req.cache_key.data = (uint8_t *)key;
    req.cache_key.len = key_len;
    return momento__call_start(c, MOMENTO__M_GET, cache, &req.base, cb, userdata);
}

int momento__send_set(momento_client *c, const char *cache, const void *key, size_t key_len,
                      const void *value, size_t value_len, uint64_t ttl_ms, momento_callback cb,
                      void *userdata)
{
    CacheClient__SetRequest req = CACHE_CLIENT____SET_REQUEST__INIT;
    req.cache_key.data = (uint8_t *)key;
    req.cache_key.len = key_len;
    req.cache_body.data = (uint8_t *)value;
    req.cache_body.len = value_len;
    req.ttl_milliseconds = ttl_ms ? ttl_ms : c->cfg.default_ttl_ms;
    return momento__call_start(c, MOMENTO__M_SET, cache, &req.base, cb, userdata);
}

int momento__send_delete(momento_client *c, const char *cache, const void *key, size_t key_len,
                         momento_callback cb, void *userdata)
{
    CacheClient__DeleteRequest req = CACHE_CLIENT____DELETE_REQUEST__INIT;
    req.cache_key.data = (uint8_t *)key;
    req.cache_key.len = key_len;
    return momento__call_start(c, MOMENTO__M_DELETE, cache, &req.base, cb, userdata);
}

int momento__check_get(const momento_client *c, const char *cache, const void *key,
                       size_t key_len, momento_callback cb)
{
    MOMENTO__CHECK(check_client(c, cb));
    MOMENTO__CHECK(momento__check_cache_name(cache));
    return momento__check_key(key, key_len);
}

int momento__check_set(const momento_client *c, const char *cache, const void *key,
                       size_t key_len, const void *value, size_t value_len, uint64_t ttl_ms,
                       momento_callback cb)
{
    MOMENTO__CHECK(check_client(c, cb));
    MOMENTO__CHECK(momento__check_cache_name(cache));
    MOMENTO__CHECK(momento__check_item(key, key_len, value, value_len));
    return ttl_ms > MOMENTO_MAX_TTL_MS ? MOMENTO_ERR_INVALID_ARGUMENT : MOMENTO_OK;
}

int momento_get(momento_client *c, const char *cache, const void *key, size_t key_len,
                momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_get(c, cache, key, key_len, cb));
    return momento__send_get(c, cache, key, key_len, cb, userdata);
}

int momento_set(momento_client *c, const char *cache, const void *key, size_t key_len,
                const void *value, size_t value_len, uint64_t ttl_ms, momento_callback cb,
                void *userdata)
{
    MOMENTO__CHECK(momento__check_set(c, cache, key, key_len, value, value_len, ttl_ms, cb));
    return momento__send_set(c, cache, key, key_len, value, value_len, ttl_ms, cb, userdata);
}

int momento_delete(momento_client *c, const char *cache, const void *key, size_t key_len,
                   momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_get(c, cache, key, key_len, cb)); /* same arguments as a get */
    return momento__send_delete(c, cache, key, key_len, cb, userdata);
}

int momento_ping(momento_client *c, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(check_client(c, cb));
    CacheClient__PingRequest req = CACHE_CLIENT____PING_REQUEST__INIT;
    return momento__call_start(c, MOMENTO__M_PING, NULL, &req.base, cb, userdata);
}

/* CreateCache, DeleteCache and FlushCache share one request shape: a cache
 * name at field 1. The three request types are distinct protobuf-c
 * descriptors, so each is filled through its own init. */
static int cache_name_call(momento_client *c, momento__method m, const char *cache,
                           momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(check_client(c, cb));
    MOMENTO__CHECK(momento__check_cache_name(cache));
    union {
        ControlClient__CreateCacheRequest create;
        ControlClient__DeleteCacheRequest del;
        ControlClient__FlushCacheRequest flush;
    } req;
    ProtobufCMessage *msg;
    if (m == MOMENTO__M_CREATE_CACHE) {
        control_client____create_cache_request__init(&req.create);
        req.create.cache_name = (char *)cache;
        msg = &req.create.base;
    } else if (m == MOMENTO__M_DELETE_CACHE) {
        control_client____delete_cache_request__init(&req.del);
        req.del.cache_name = (char *)cache;
        msg = &req.del.base;
    } else {
        control_client____flush_cache_request__init(&req.flush);
        req.flush.cache_name = (char *)cache;
        msg = &req.flush.base;
    }
    return momento__call_start(c, m, NULL, msg, cb, userdata);
}

int momento_create_cache(momento_client *c, const char *cache, momento_callback cb,
                         void *userdata)
{
    return cache_name_call(c, MOMENTO__M_CREATE_CACHE, cache, cb, userdata);
}

int momento_delete_cache(momento_client *c, const char *cache, momento_callback cb,
                         void *userdata)
{
    return cache_name_call(c, MOMENTO__M_DELETE_CACHE, cache, cb, userdata);
}

int momento_flush_cache(momento_client *c, const char *cache, momento_callback cb,
                        void *userdata)
{
    return cache_name_call(c, MOMENTO__M_FLUSH_CACHE, cache, cb, userdata);
}

/* ListCaches may be paged. The user's request becomes a chain of page calls
 * whose names are gathered here; the user's callback runs once, at the end,
 * with all of them (or with the first error). */
typedef struct list_state {
    momento_client *client;
    momento_callback cb;
    void *userdata;
    char **names;
    size_t n, cap;
} list_state;

static void list_finish(list_state *st, const momento_result *r)
{
    momento_result out = *r;
    out.next_token = NULL;
    if (r->error == MOMENTO_OK) {
        out.caches = (const char *const *)st->names;
        out.n_caches = st->n;
    } else {
        out.caches = NULL;
        out.n_caches = 0;
    }
    st->cb(&out, st->userdata);
    for (size_t i = 0; i < st->n; i++)
        free(st->names[i]);
    free(st->names);
    free(st);
}

static int list_page(list_state *st, const char *token);

static void list_page_done(const momento_result *r, void *userdata)
{
    list_state *st = userdata;
    int err = r->error;
    for (size_t i = 0; err == MOMENTO_OK && i < r->n_caches; i++) {
        if (st->n == st->cap) {
            size_t cap = st->cap ? st->cap * 2 : 16;
            char **grown = realloc(st->names, cap * sizeof(*grown));
            if (!grown) {
                err = MOMENTO_ERR_NO_MEMORY;
                break;
            }
            st->names = grown;
            st->cap = cap;
        }
        size_t len = strlen(r->caches[i]) + 1;
        st->names[st->n] = malloc(len);
        if (!st->names[st->n]) {
            err = MOMENTO_ERR_NO_MEMORY;
            break;
        }
        memcpy(st->names[st->n++], r->caches[i], len);
    }
    if (err == MOMENTO_OK && r->next_token && *r->next_token) {
        int rc = list_page(st, r->next_token);
        if (rc == MOMENTO_OK)
            return;
        err = rc;
    }
    if (err != r->error) {
        momento_result failed;
        momento__result_local_error(&failed, err == MOMENTO_ERR_CLOSED ? MOMENTO_ERR_CANCELLED : err,
                                    "listing caches stopped part-way");
        list_finish(st, &failed);
        return;
    }
    list_finish(st, r);
}

static int list_page(list_state *st, const char *token)
{
    ControlClient__ListCachesRequest req = CONTROL_CLIENT____LIST_CACHES_REQUEST__INIT;
    req.next_token = (char *)(token ? token : "");
    return momento__call_start(st->client, MOMENTO__M_LIST_CACHES, NULL, &req.base,
                               list_page_done, st);
}

int momento_list_caches(momento_client *c, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(check_client(c, cb));
    list_state *st = calloc(1, sizeof(*st));
    if (!st)
        return MOMENTO_ERR_NO_MEMORY;
    st->client = c;
    st->cb = cb;
    st->userdata = userdata;
    int rc = list_page(st, NULL);
    if (rc != MOMENTO_OK)
        free(st);
    return rc;
}
