/* What each RPC does to the store, and the exact statuses Momento answers
 * with (PROTOCOL.md). Called on the server thread only. */
#include "server_internal.h"

#include "cacheclient.pb-c.h"
#include "cacheping.pb-c.h"
#include "controlclient.pb-c.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void srv_reply_error(srv_reply *r, grpc_status_code status, const char *err, const char *fmt, ...)
{
    srv_reply_clear(r);
    r->status = status;
    r->err = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->details, sizeof(r->details), fmt, ap);
    va_end(ap);
}

int srv_reply_add(srv_reply *r, const ProtobufCMessage *m)
{
    grpc_slice *grown = realloc(r->msgs, (r->n_msgs + 1) * sizeof(*grown));
    if (!grown) {
        srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, "server out of memory");
        return -1;
    }
    r->msgs = grown;
    size_t size = protobuf_c_message_get_packed_size(m);
    grpc_slice s = grpc_slice_malloc(size);
    protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
    r->msgs[r->n_msgs++] = s;
    return 0;
}

void srv_reply_clear(srv_reply *r)
{
    for (size_t i = 0; i < r->n_msgs; i++)
        grpc_slice_unref(r->msgs[i]);
    free(r->msgs);
    r->msgs = NULL;
    r->n_msgs = 0;
    r->status = GRPC_STATUS_OK;
    r->details[0] = '\0';
    r->err = NULL;
}

static void no_memory(srv_reply *r)
{
    srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, "server out of memory");
}

/* Keys must be non-empty; key + value within the item limit. */
static bool check_key(srv_reply *r, const ProtobufCBinaryData *key)
{
    if (key->len == 0) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "key must not be empty");
        return false;
    }
    return true;
}

static bool check_item(momento_local *s, srv_reply *r, const ProtobufCBinaryData *key,
                       size_t value_len)
{
    if (!check_key(r, key))
        return false;
    if (key->len + value_len > s->opts.max_item_bytes) {
        srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, "item_size_limit_exceeded",
                        "item size %zu bytes exceeds the limit of %" PRIu64 " bytes",
                        key->len + value_len, s->opts.max_item_bytes);
        return false;
    }
    return true;
}

static bool same_value(const store_item *it, const ProtobufCBinaryData *v)
{
    return it->value_len == v->len && (v->len == 0 || memcmp(it->value, v->data, v->len) == 0);
}

static void set_item(momento_local *s, store_cache *c, srv_reply *r, const ProtobufCBinaryData *key,
                     const ProtobufCBinaryData *value, uint64_t ttl, int64_t now)
{
    if (!store_set(&s->store, c, key->data, key->len, value->data, value->len, ttl, now))
        no_memory(r);
}

/* ---- data plane ------------------------------------------------------ */

#define UNPACK(type, fn)                                                                           \
    type *req = fn(NULL, len, body);                                                               \
    if (!req) {                                                                                    \
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "request could not be decoded");   \
        return;                                                                                    \
    }

static void do_get(momento_local *s, store_cache *c, const uint8_t *body, size_t len, srv_reply *r)
{
    UNPACK(CacheClient__GetRequest, cache_client____get_request__unpack);
    if (check_key(r, &req->cache_key)) {
        store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len,
                                   store_now_ms());
        CacheClient__GetResponse resp = CACHE_CLIENT____GET_RESPONSE__INIT;
        resp.result = it ? CACHE_CLIENT__ECACHE_RESULT__Hit : CACHE_CLIENT__ECACHE_RESULT__Miss;
        if (it) {
            resp.cache_body.data = it->value;
            resp.cache_body.len = it->value_len;
        }
        srv_reply_add(r, &resp.base);
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void do_set(momento_local *s, store_cache *c, const uint8_t *body, size_t len, srv_reply *r)
{
    UNPACK(CacheClient__SetRequest, cache_client____set_request__unpack);
    if (check_item(s, r, &req->cache_key, req->cache_body.len)) {
        set_item(s, c, r, &req->cache_key, &req->cache_body, req->ttl_milliseconds,
                 store_now_ms());
        if (r->status == GRPC_STATUS_OK) {
            CacheClient__SetResponse resp = CACHE_CLIENT____SET_RESPONSE__INIT;
            resp.result = CACHE_CLIENT__ECACHE_RESULT__Ok;
            srv_reply_add(r, &resp.base);
        }
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void do_delete(momento_local *s, store_cache *c, const uint8_t *body, size_t len,
                      srv_reply *r)
{
    UNPACK(CacheClient__DeleteRequest, cache_client____delete_request__unpack);
    if (check_key(r, &req->cache_key)) {
        store_delete(&s->store, c, req->cache_key.data, req->cache_key.len);
        CacheClient__DeleteResponse resp = CACHE_CLIENT____DELETE_RESPONSE__INIT;
        srv_reply_add(r, &resp.base);
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* Does the SetIf condition hold for the current item (NULL = absent)? */
static int condition_holds(const CacheClient__SetIfRequest *req, const store_item *it)
{
    switch (req->condition_case) {
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT:
        return it != NULL;
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_PRESENT_AND_NOT_EQUAL:
        return it && !same_value(it, &req->present_and_not_equal->value_to_check);
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT:
        return it == NULL;
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_EQUAL:
        return it && same_value(it, &req->equal->value_to_check);
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_ABSENT_OR_EQUAL:
        return !it || same_value(it, &req->absent_or_equal->value_to_check);
    case CACHE_CLIENT____SET_IF_REQUEST__CONDITION_NOT_EQUAL:
        return !it || !same_value(it, &req->not_equal->value_to_check);
    default:
        return -1;
    }
}

static void do_set_if(momento_local *s, store_cache *c, const uint8_t *body, size_t len,
                      srv_reply *r)
{
    UNPACK(CacheClient__SetIfRequest, cache_client____set_if_request__unpack);
    if (check_item(s, r, &req->cache_key, req->cache_body.len)) {
        int64_t now = store_now_ms();
        store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len, now);
        int holds = condition_holds(req, it);
        if (holds < 0) {
            srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "SetIf needs a condition");
        } else {
            if (holds)
                set_item(s, c, r, &req->cache_key, &req->cache_body, req->ttl_milliseconds, now);
            if (r->status == GRPC_STATUS_OK) {
                CacheClient__SetIfResponse resp = CACHE_CLIENT____SET_IF_RESPONSE__INIT;
                CacheClient__SetIfResponse__Stored stored =
                    CACHE_CLIENT____SET_IF_RESPONSE____STORED__INIT;
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
        }
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void do_set_if_not_exists(momento_local *s, store_cache *c, const uint8_t *body,
                                 size_t len, srv_reply *r)
{
    UNPACK(CacheClient__SetIfNotExistsRequest, cache_client____set_if_not_exists_request__unpack);
    if (check_item(s, r, &req->cache_key, req->cache_body.len)) {
        int64_t now = store_now_ms();
        store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len, now);
        if (!it)
            set_item(s, c, r, &req->cache_key, &req->cache_body, req->ttl_milliseconds, now);
        if (r->status == GRPC_STATUS_OK) {
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
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* Parses a stored value as a base-10 int64, as Momento's increment does. */
static bool parse_int64(const uint8_t *p, size_t n, int64_t *out)
{
    if (n == 0 || n > 20)
        return false;
    char buf[24];
    memcpy(buf, p, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (*end != '\0' || errno != 0 || buf[0] == ' ' || buf[0] == '+')
        return false;
    *out = v;
    return true;
}

static void do_increment(momento_local *s, store_cache *c, const uint8_t *body, size_t len,
                         srv_reply *r)
{
    UNPACK(CacheClient__IncrementRequest, cache_client____increment_request__unpack);
    if (check_key(r, &req->cache_key)) {
        int64_t now = store_now_ms();
        store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len, now);
        int64_t value = 0;
        if (it && !parse_int64(it->value, it->value_len, &value)) {
            srv_reply_error(r, GRPC_STATUS_FAILED_PRECONDITION, NULL,
                            "the stored value is not a base-10 64-bit integer");
        } else if (__builtin_add_overflow(value, req->amount, &value)) {
            srv_reply_error(r, GRPC_STATUS_FAILED_PRECONDITION, NULL,
                            "incrementing would overflow a 64-bit integer");
        } else {
            char text[24];
            int n = snprintf(text, sizeof(text), "%" PRId64, value);
            ProtobufCBinaryData v = {(size_t)n, (uint8_t *)text};
            set_item(s, c, r, &req->cache_key, &v, req->ttl_milliseconds, now);
            if (r->status == GRPC_STATUS_OK) {
                CacheClient__IncrementResponse resp = CACHE_CLIENT____INCREMENT_RESPONSE__INIT;
                resp.value = value;
                srv_reply_add(r, &resp.base);
            }
        }
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void do_keys_exist(momento_local *s, store_cache *c, const uint8_t *body, size_t len,
                          srv_reply *r)
{
    UNPACK(CacheClient__KeysExistRequest, cache_client____keys_exist_request__unpack);
    protobuf_c_boolean *exists = calloc(req->n_cache_keys + 1, sizeof(*exists));
    if (!exists) {
        no_memory(r);
    } else {
        int64_t now = store_now_ms();
        bool ok = true;
        for (size_t i = 0; ok && i < req->n_cache_keys; i++) {
            ok = check_key(r, &req->cache_keys[i]);
            if (ok)
                exists[i] = store_get(&s->store, c, req->cache_keys[i].data,
                                      req->cache_keys[i].len, now) != NULL;
        }
        if (ok) {
            CacheClient__KeysExistResponse resp = CACHE_CLIENT____KEYS_EXIST_RESPONSE__INIT;
            resp.n_exists = req->n_cache_keys;
            resp.exists = exists;
            srv_reply_add(r, &resp.base);
        }
        free(exists);
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* Milliseconds left, with "never expires" as the largest value. */
static uint64_t remaining_ms(const store_item *it, int64_t now)
{
    return it->expires_ms == 0 ? UINT64_MAX : (uint64_t)(it->expires_ms - now);
}

static void do_item_get_ttl(momento_local *s, store_cache *c, const uint8_t *body, size_t len,
                            srv_reply *r)
{
    UNPACK(CacheClient__ItemGetTtlRequest, cache_client____item_get_ttl_request__unpack);
    if (check_key(r, &req->cache_key)) {
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
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void do_update_ttl(momento_local *s, store_cache *c, const uint8_t *body, size_t len,
                          srv_reply *r)
{
    UNPACK(CacheClient__UpdateTtlRequest, cache_client____update_ttl_request__unpack);
    if (check_key(r, &req->cache_key)) {
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
                applied = -2;
            }
            if (applied == 1)
                it->expires_ms = (target == 0 || target > (uint64_t)(INT64_MAX - now))
                                     ? 0
                                     : now + (int64_t)target;
        }
        if (applied != -2) {
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
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void do_get_batch(momento_local *s, store_cache *c, const uint8_t *body, size_t len,
                         srv_reply *r)
{
    UNPACK(CacheClient__GetBatchRequest, cache_client____get_batch_request__unpack);
    bool ok = true;
    for (size_t i = 0; ok && i < req->n_items; i++)
        ok = check_key(r, &req->items[i]->cache_key);
    int64_t now = store_now_ms();
    for (size_t i = 0; ok && i < req->n_items; i++) {
        const ProtobufCBinaryData *key = &req->items[i]->cache_key;
        store_item *it = store_get(&s->store, c, key->data, key->len, now);
        CacheClient__GetResponse resp = CACHE_CLIENT____GET_RESPONSE__INIT;
        resp.result = it ? CACHE_CLIENT__ECACHE_RESULT__Hit : CACHE_CLIENT__ECACHE_RESULT__Miss;
        if (it) {
            resp.cache_body.data = it->value;
            resp.cache_body.len = it->value_len;
        }
        ok = srv_reply_add(r, &resp.base) == 0;
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void do_set_batch(momento_local *s, store_cache *c, const uint8_t *body, size_t len,
                         srv_reply *r)
{
    UNPACK(CacheClient__SetBatchRequest, cache_client____set_batch_request__unpack);
    /* Check every item before storing any, so a rejected batch changes
     * nothing. */
    bool ok = true;
    for (size_t i = 0; ok && i < req->n_items; i++)
        ok = check_item(s, r, &req->items[i]->cache_key, req->items[i]->cache_body.len);
    int64_t now = store_now_ms();
    for (size_t i = 0; ok && i < req->n_items; i++) {
        CacheClient__SetRequest *item = req->items[i];
        set_item(s, c, r, &item->cache_key, &item->cache_body, item->ttl_milliseconds, now);
        ok = r->status == GRPC_STATUS_OK;
        if (ok) {
            CacheClient__SetResponse resp = CACHE_CLIENT____SET_RESPONSE__INIT;
            resp.result = CACHE_CLIENT__ECACHE_RESULT__Ok;
            ok = srv_reply_add(r, &resp.base) == 0;
        }
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* ---- control plane and ping ------------------------------------------ */

static const char *cache_name_problem(const char *name)
{
    if (!name || !*name)
        return "cache name must not be empty";
    if (strlen(name) > 255)
        return "cache name must be at most 255 bytes";
    return NULL;
}

static void do_create_cache(momento_local *s, const uint8_t *body, size_t len, srv_reply *r)
{
    UNPACK(ControlClient__CreateCacheRequest, control_client____create_cache_request__unpack);
    const char *why = cache_name_problem(req->cache_name);
    if (why) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "%s", why);
    } else {
        int rc = store_create_cache(&s->store, req->cache_name);
        if (rc == -1)
            srv_reply_error(r, GRPC_STATUS_ALREADY_EXISTS, NULL, "cache already exists");
        else if (rc < 0)
            no_memory(r);
        else {
            ControlClient__CreateCacheResponse resp = CONTROL_CLIENT____CREATE_CACHE_RESPONSE__INIT;
            srv_reply_add(r, &resp.base);
        }
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

/* DeleteCache and FlushCache: a cache name in, NOT_FOUND when it is not
 * there. Both requests decode with either descriptor (field 1, a string);
 * the response messages are empty. */
static void do_cache_op(momento_local *s, srv_method m, const uint8_t *body, size_t len,
                        srv_reply *r)
{
    UNPACK(ControlClient__DeleteCacheRequest, control_client____delete_cache_request__unpack);
    const char *why = cache_name_problem(req->cache_name);
    int rc = 0;
    if (why)
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "%s", why);
    else if (m == SRV_DELETE_CACHE)
        rc = store_delete_cache(&s->store, req->cache_name);
    else
        rc = store_flush_cache(&s->store, req->cache_name);
    if (rc < 0) {
        srv_reply_error(r, GRPC_STATUS_NOT_FOUND, NULL, "cache not found");
    } else if (!why) {
        ControlClient__DeleteCacheResponse resp = CONTROL_CLIENT____DELETE_CACHE_RESPONSE__INIT;
        srv_reply_add(r, &resp.base); /* packs to zero bytes, like _FlushCacheResponse */
    }
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

static int by_cache_name(const void *a, const void *b)
{
    return strcmp((*(ControlClient__Cache *const *)a)->cache_name,
                  (*(ControlClient__Cache *const *)b)->cache_name);
}

static void do_list_caches(momento_local *s, const uint8_t *body, size_t len, srv_reply *r)
{
    UNPACK(ControlClient__ListCachesRequest, control_client____list_caches_request__unpack);
    size_t n = HASH_COUNT(s->store.caches);
    ControlClient__Cache *entries = calloc(n + 1, sizeof(*entries));
    ControlClient__Cache **ptrs = calloc(n + 1, sizeof(*ptrs));
    if (!entries || !ptrs) {
        no_memory(r);
    } else {
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
        for (store_cache *c = s->store.caches; c; c = c->hh.next, i++) {
            control_client____cache__init(&entries[i]);
            entries[i].cache_name = c->name;
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
            /* Paged: name order, resuming after the token (the last name
             * of the previous page), so caches created or deleted between
             * pages neither repeat nor shift the rest. */
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
    }
    free(entries);
    free(ptrs);
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void do_ping(const uint8_t *body, size_t len, srv_reply *r)
{
    UNPACK(CacheClient__PingRequest, cache_client____ping_request__unpack);
    CacheClient__PingResponse resp = CACHE_CLIENT____PING_RESPONSE__INIT;
    srv_reply_add(r, &resp.base);
    protobuf_c_message_free_unpacked(&req->base, NULL);
}

void srv_handle(momento_local *s, srv_method m, const char *cache, size_t cache_len,
                const uint8_t *body, size_t len, srv_reply *r)
{
    store_cache *c = NULL;
    if (srv_methods[m].data) {
        if (!cache || cache_len == 0) {
            srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                            "request is missing the cache header");
            return;
        }
        c = store_find_cache(&s->store, cache, cache_len);
        if (!c) {
            /* No `err` trailer: official SDKs read `store_not_found` as a
             * missing *store* (another Momento product), not a cache. */
            srv_reply_error(r, GRPC_STATUS_NOT_FOUND, NULL, "cache not found: %.*s",
                            (int)(cache_len > 100 ? 100 : cache_len), cache);
            return;
        }
    }
    switch (m) {
    case SRV_GET: do_get(s, c, body, len, r); break;
    case SRV_SET: do_set(s, c, body, len, r); break;
    case SRV_DELETE: do_delete(s, c, body, len, r); break;
    case SRV_SET_IF: do_set_if(s, c, body, len, r); break;
    case SRV_SET_IF_NOT_EXISTS: do_set_if_not_exists(s, c, body, len, r); break;
    case SRV_INCREMENT: do_increment(s, c, body, len, r); break;
    case SRV_KEYS_EXIST: do_keys_exist(s, c, body, len, r); break;
    case SRV_ITEM_GET_TTL: do_item_get_ttl(s, c, body, len, r); break;
    case SRV_UPDATE_TTL: do_update_ttl(s, c, body, len, r); break;
    case SRV_GET_BATCH: do_get_batch(s, c, body, len, r); break;
    case SRV_SET_BATCH: do_set_batch(s, c, body, len, r); break;
    case SRV_PING: do_ping(body, len, r); break;
    case SRV_CREATE_CACHE: do_create_cache(s, body, len, r); break;
    case SRV_DELETE_CACHE:
    case SRV_FLUSH_CACHE: do_cache_op(s, m, body, len, r); break;
    case SRV_LIST_CACHES: do_list_caches(s, body, len, r); break;
    default:
        srv_reply_error(r, GRPC_STATUS_UNIMPLEMENTED, NULL, "method not implemented");
    }
}
