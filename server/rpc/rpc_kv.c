/* The key-value RPCs: Get, Set, Delete, Increment, KeysExist, ItemGetType. */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"

#include "cacheclient.pb-c.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Wire format: field 1 (result, varint) tag 0x08; field 2 (cache_body,
 * bytes) tag 0x12, then the length as a varint and the bytes. proto3
 * leaves an empty cache_body out, as protobuf-c does. */
static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t srv_get_response_size(const store_item *it)
{
    if (!it || it->value_len == 0)
        return 2;
    return 3 + varint_size(it->value_len) + it->value_len;
}

uint8_t *srv_pack_get_response(uint8_t *p, const store_item *it)
{
    *p++ = 0x08;
    *p++ = it ? CACHE_CLIENT__ECACHE_RESULT__Hit : CACHE_CLIENT__ECACHE_RESULT__Miss;
    if (!it || it->value_len == 0)
        return p;
    *p++ = 0x12;
    uint64_t v = it->value_len;
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    memcpy(p, it->value, it->value_len);
    return p + it->value_len;
}

int srv_reply_get(srv_reply *r, const store_item *it)
{
    size_t size = srv_get_response_size(it);
    uint8_t *p = srv_reply_block(r, 1, size);
    if (!p)
        return -1;
    srv_pack_get_response(p, it);
    srv_reply_carve(r, size);
    return 0;
}

int srv_reply_set_ok(srv_reply *r)
{
    /* _SetResponse{result: Ok}: field 1 (varint) = 1. */
    static const uint8_t ok[] = {0x08, CACHE_CLIENT__ECACHE_RESULT__Ok};
    return srv_reply_add_static(r, ok, sizeof(ok));
}

/* A collection has no scalar value to return: Get on one is the type
 * mismatch. */
void srv_get(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__GetRequest *req = (const CacheClient__GetRequest *)msg;
    if (!srv_check_key(r, &req->cache_key))
        return;
    store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len,
                               store_now_ms());
    if (it && it->kind != STORE_SCALAR)
        srv_reply_wrong_type(r);
    else
        srv_reply_get(r, it);
}

/* Like Momento's, a Set replaces whatever the key held, a collection
 * included. */
void srv_set(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__SetRequest *req = (const CacheClient__SetRequest *)msg;
    if (!srv_check_item(s, r, &req->cache_key, req->cache_body.len))
        return;
    srv_set_item(s, c, r, &req->cache_key, &req->cache_body, req->ttl_milliseconds, store_now_ms());
    if (r->status == GRPC_STATUS_OK)
        srv_reply_set_ok(r);
}

/* Deleting a key that is not there succeeds too, as Momento's does. */
void srv_delete(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__DeleteRequest *req = (const CacheClient__DeleteRequest *)msg;
    if (!srv_check_key(r, &req->cache_key))
        return;
    store_delete(&s->store, c, req->cache_key.data, req->cache_key.len);
    CacheClient__DeleteResponse resp = CACHE_CLIENT____DELETE_RESPONSE__INIT;
    srv_reply_add(r, &resp.base);
}

/* Parses a stored value as a base-10 int64, as Momento's increment does:
 * an optional '-' and then decimal digits only, 1 to 20 bytes in all, within
 * int64. No whitespace, no '+', no NUL or anything after the digits. */
bool srv_parse_int64(const uint8_t *p, size_t n, int64_t *out)
{
    if (n == 0 || n > 20)
        return false;
    bool neg = p[0] == '-';
    size_t i = neg ? 1 : 0;
    if (i == n)
        return false;
    /* Accumulated negatively, so INT64_MIN parses too. */
    int64_t v = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_sub_overflow(v, p[i] - '0', &v))
            return false;
    }
    if (!neg && v == INT64_MIN)
        return false;
    *out = neg ? v : -v;
    return true;
}

/* A missing key counts as 0; the result is stored back as base-10 text. */
void srv_increment(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__IncrementRequest *req = (const CacheClient__IncrementRequest *)msg;
    if (!srv_check_key(r, &req->cache_key))
        return;
    int64_t now = store_now_ms();
    store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len, now);
    int64_t value = 0;
    if (it && it->kind != STORE_SCALAR) {
        srv_reply_wrong_type(r);
        return;
    }
    if (it && !srv_parse_int64(it->value, it->value_len, &value)) {
        srv_reply_error(r, GRPC_STATUS_FAILED_PRECONDITION, NULL,
                        "the stored value is not a base-10 64-bit integer");
        return;
    }
    if (__builtin_add_overflow(value, req->amount, &value)) {
        srv_reply_error(r, GRPC_STATUS_FAILED_PRECONDITION, NULL,
                        "incrementing would overflow a 64-bit integer");
        return;
    }
    char text[24];
    int n = snprintf(text, sizeof(text), "%" PRId64, value);
    ProtobufCBinaryData v = {(size_t)n, (uint8_t *)text};
    srv_set_item(s, c, r, &req->cache_key, &v, req->ttl_milliseconds, now);
    if (r->status == GRPC_STATUS_OK) {
        CacheClient__IncrementResponse resp = CACHE_CLIENT____INCREMENT_RESPONSE__INIT;
        resp.value = value;
        srv_reply_add(r, &resp.base);
    }
}

void srv_keys_exist(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__KeysExistRequest *req = (const CacheClient__KeysExistRequest *)msg;
    protobuf_c_boolean *exists = calloc(req->n_cache_keys + 1, sizeof(*exists));
    if (!exists) {
        srv_reply_no_memory(r);
        return;
    }
    int64_t now = store_now_ms();
    bool ok = true;
    for (size_t i = 0; ok && i < req->n_cache_keys; i++) {
        ok = srv_check_key(r, &req->cache_keys[i]);
        if (ok)
            exists[i] = store_get(&s->store, c, req->cache_keys[i].data, req->cache_keys[i].len,
                                  now) != NULL;
        srv_yield();
    }
    if (ok) {
        CacheClient__KeysExistResponse resp = CACHE_CLIENT____KEYS_EXIST_RESPONSE__INIT;
        resp.n_exists = req->n_cache_keys;
        resp.exists = exists;
        srv_reply_add(r, &resp.base);
    }
    free(exists);
}

/* store_kind follows the wire's ItemType numbering; the switch keeps the
 * two from drifting apart silently. */
static CacheClient__ItemGetTypeResponse__ItemType item_type(store_kind kind)
{
    switch (kind) {
    case STORE_DICTIONARY:
        return CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__DICTIONARY;
    case STORE_SET:
        return CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__SET;
    case STORE_LIST:
        return CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__LIST;
    case STORE_SORTED_SET:
        return CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__SORTED_SET;
    case STORE_SCALAR:
    default:
        return CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__ITEM_TYPE__SCALAR;
    }
}

void srv_item_get_type(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                       srv_reply *r)
{
    const CacheClient__ItemGetTypeRequest *req = (const CacheClient__ItemGetTypeRequest *)msg;
    if (!srv_check_key(r, &req->cache_key))
        return;
    store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len,
                               store_now_ms());
    CacheClient__ItemGetTypeResponse resp = CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__INIT;
    CacheClient__ItemGetTypeResponse__Found found =
        CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE____FOUND__INIT;
    CacheClient__ItemGetTypeResponse__Missing missing =
        CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE____MISSING__INIT;
    if (it) {
        found.item_type = item_type(it->kind);
        resp.result_case = CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__RESULT_FOUND;
        resp.found = &found;
    } else {
        resp.result_case = CACHE_CLIENT____ITEM_GET_TYPE_RESPONSE__RESULT_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}
