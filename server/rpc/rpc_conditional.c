/* The conditional writes: SetIf under each of its conditions, the older
 * SetIfNotExists that official clients of some versions still send, and the
 * hash-based pair (GetWithHash, SetIfHash). The writes answer Stored or
 * NotStored; a write that does not happen is not an error. */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"

#include "cacheclient.pb-c.h"

#include <openssl/evp.h>
#include <string.h>

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

/* ---- GetWithHash and SetIfHash.
 *
 * The hash of a value is its SHA-256 digest, 32 opaque bytes: stable (the
 * same bytes always give the same hash, across restarts and builds) and, in
 * practice, different for different values, which is all the SDKs rely on
 * (they compare hashes as bytes and never look inside).
 *
 * It is computed when asked for, not kept with the item: every way a value
 * gets written (Set, SetBatch, SetIf, Increment, ...) then has a hash with no
 * change to the store, no item pays 32 bytes for a feature few callers use,
 * and a digest costs a few milliseconds at most, at the 5 MB item limit
 * (done then without the turn: the value is its key's, pinned). */
#define HASH_LEN 32
#define HASH_LET_GO_BYTES (256u * 1024u)

/* false only when libcrypto fails (out of memory): the caller answers
 * RESOURCE_EXHAUSTED rather than a wrong hash. */
static bool value_hash(const uint8_t *p, size_t n, uint8_t out[HASH_LEN])
{
    unsigned int len = 0;
    bool let = n >= HASH_LET_GO_BYTES && srv_let_go();
    /* EVP_Digest reads nothing for n == 0, so an empty value's NULL data is
     * fine. */
    bool ok = EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) == 1 && len == HASH_LEN;
    if (let)
        srv_take_back();
    return ok;
}

static bool hash_equals(const uint8_t h[HASH_LEN], const ProtobufCBinaryData *check)
{
    return check->len == HASH_LEN && memcmp(h, check->data, HASH_LEN) == 0;
}

void srv_get_with_hash(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__GetWithHashRequest *req = (const CacheClient__GetWithHashRequest *)msg;
    if (!srv_check_key(r, &req->cache_key))
        return;
    store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len,
                               store_now_ms());
    /* As for Get: a collection has no scalar value to return. */
    if (it && it->kind != STORE_SCALAR) {
        srv_reply_wrong_type(r);
        return;
    }
    CacheClient__GetWithHashResponse resp = CACHE_CLIENT____GET_WITH_HASH_RESPONSE__INIT;
    CacheClient__GetWithHashResponse__Found found =
        CACHE_CLIENT____GET_WITH_HASH_RESPONSE____FOUND__INIT;
    CacheClient__GetWithHashResponse__Missing missing =
        CACHE_CLIENT____GET_WITH_HASH_RESPONSE____MISSING__INIT;
    uint8_t hash[HASH_LEN];
    if (it) {
        if (!value_hash(it->value, it->value_len, hash)) {
            srv_reply_no_memory(r);
            return;
        }
        found.value.data = it->value;
        found.value.len = it->value_len;
        found.hash.data = hash;
        found.hash.len = HASH_LEN;
        resp.result_case = CACHE_CLIENT____GET_WITH_HASH_RESPONSE__RESULT_FOUND;
        resp.found = &found;
    } else {
        resp.result_case = CACHE_CLIENT____GET_WITH_HASH_RESPONSE__RESULT_MISSING;
        resp.missing = &missing;
    }
    /* Packed into the reply's block, not srv_reply_add()'s gRPC slice: a
     * value near the item limit whose memory cannot be had then answers
     * RESOURCE_EXHAUSTED instead of aborting the server. */
    size_t size = protobuf_c_message_get_packed_size(&resp.base);
    uint8_t *p = srv_reply_block(r, 1, size);
    if (!p)
        return;
    protobuf_c_message_pack(&resp.base, p);
    srv_reply_carve(r, size);
}

/* Does the SetIfHash condition hold for the current item (NULL = absent)?
 * `h` is the item's hash, read only when there is an item and a hash to
 * compare. A request without a condition was refused before this. */
static bool hash_condition_holds(const CacheClient__SetIfHashRequest *req, const store_item *it,
                                const uint8_t h[HASH_LEN])
{
    switch (req->condition_case) {
    case CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_PRESENT_AND_HASH_EQUAL:
        return it && hash_equals(h, &req->present_and_hash_equal->hash_to_check);
    case CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_PRESENT_AND_NOT_HASH_EQUAL:
        return it && !hash_equals(h, &req->present_and_not_hash_equal->hash_to_check);
    case CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_ABSENT_OR_HASH_EQUAL:
        return !it || hash_equals(h, &req->absent_or_hash_equal->hash_to_check);
    case CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_ABSENT_OR_NOT_HASH_EQUAL:
        return !it || !hash_equals(h, &req->absent_or_not_hash_equal->hash_to_check);
    case CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_UNCONDITIONAL:
        return true;
    default:
        return false;
    }
}

void srv_set_if_hash(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__SetIfHashRequest *req = (const CacheClient__SetIfHashRequest *)msg;
    if (!srv_check_item(s, r, &req->cache_key, req->cache_body.len))
        return;
    /* Refused before the type check, as SetIf refuses a missing condition
     * whatever the key holds. protobuf-c sets no other case than those
     * declared. */
    if (req->condition_case == CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION__NOT_SET) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "SetIfHash needs a condition");
        return;
    }
    bool unconditional =
        req->condition_case == CACHE_CLIENT____SET_IF_HASH_REQUEST__CONDITION_UNCONDITIONAL;
    int64_t now = store_now_ms();
    store_item *it = store_get(&s->store, c, req->cache_key.data, req->cache_key.len, now);
    /* A hash condition needs a scalar value to hash; a collection has none:
     * the type mismatch. Unconditional replaces the collection, as Set
     * does. */
    if (it && it->kind != STORE_SCALAR && !unconditional) {
        srv_reply_wrong_type(r);
        return;
    }
    uint8_t old_hash[HASH_LEN] = {0};
    if (it && !unconditional && !value_hash(it->value, it->value_len, old_hash)) {
        srv_reply_no_memory(r);
        return;
    }
    bool holds = hash_condition_holds(req, it, old_hash);
    /* The new value's hash before the write, so that a failure to compute it
     * leaves the store untouched. */
    uint8_t new_hash[HASH_LEN];
    if (holds && !value_hash(req->cache_body.data, req->cache_body.len, new_hash)) {
        srv_reply_no_memory(r);
        return;
    }
    if (holds)
        srv_set_item(s, c, r, &req->cache_key, &req->cache_body, req->ttl_milliseconds, now);
    if (r->status != GRPC_STATUS_OK)
        return;
    CacheClient__SetIfHashResponse resp = CACHE_CLIENT____SET_IF_HASH_RESPONSE__INIT;
    CacheClient__SetIfHashResponse__Stored stored =
        CACHE_CLIENT____SET_IF_HASH_RESPONSE____STORED__INIT;
    CacheClient__SetIfHashResponse__NotStored not_stored =
        CACHE_CLIENT____SET_IF_HASH_RESPONSE____NOT_STORED__INIT;
    if (holds) {
        stored.new_hash.data = new_hash;
        stored.new_hash.len = HASH_LEN;
        resp.result_case = CACHE_CLIENT____SET_IF_HASH_RESPONSE__RESULT_STORED;
        resp.stored = &stored;
    } else {
        resp.result_case = CACHE_CLIENT____SET_IF_HASH_RESPONSE__RESULT_NOT_STORED;
        resp.not_stored = &not_stored;
    }
    srv_reply_add(r, &resp.base);
}
