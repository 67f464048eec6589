/* The dictionary RPCs: DictionarySet, DictionaryIncrement, DictionaryGet,
 * DictionaryFetch, DictionaryDelete and DictionaryLength.
 *
 * A dictionary is a store collection (store.h) holding a uthash table of
 * fields, so that each RPC costs in proportion to the fields it names
 * (Fetch to the dictionary's size, Length nothing). Momento's rules, from
 * its SDKs' integration tests:
 * - a missing dictionary is Missing to every read, and a write creates it
 *   with the request's TTL; a write to an existing one resets its TTL only
 *   with refresh_ttl (CollectionTtl);
 * - removing the last field deletes the dictionary;
 * - a dictionary RPC on a key of another kind is the type mismatch
 *   (FAILED_PRECONDITION);
 * - DictionaryIncrement reads a field as base-10 int64 text, a missing one
 *   as 0, and stores the sum back as text; any other value is
 *   FAILED_PRECONDITION; an amount of 0 is allowed (it reads the number).
 * Fields and values may be empty bytes; one field and value together may
 * not exceed Momento's element limit (srv_check_element()). */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"

#include "cacheclient.pb-c.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dict_field {
    UT_hash_handle hh;
    uint64_t cost; /* what it adds to the dictionary's coll.bytes */
    size_t field_len;
    size_t value_len;
    uint8_t *value; /* points into data */
    uint8_t data[]; /* field bytes, then value bytes */
} dict_field;

typedef struct dictionary {
    store_coll coll; /* first: the store frees and counts it through this */
    dict_field *fields;
    uint64_t wire;   /* the fields as DictionaryFetch carries them (pair_wire), summed */
} dictionary;

/* What a field and its value take in DictionaryFetch's reply: a repeated
 * message field holding both (each counted as if present: proto3 leaves
 * out empty bytes). */
static uint64_t pair_wire(const dict_field *f)
{
    uint64_t m = srv_field_bytes(f->field_len) + srv_field_bytes(f->value_len);
    return srv_field_bytes(m);
}

/* protobuf-c leaves the data of empty bytes NULL; the hash functions and
 * memcpy want a pointer all the same. */
static const uint8_t *bytes_of(const ProtobufCBinaryData *b)
{
    return b->len ? b->data : (const uint8_t *)"";
}

static void dict_destroy(store_coll *coll)
{
    dictionary *d = (dictionary *)coll;
    dict_field *f, *tmp;
    HASH_ITER(hh, d->fields, f, tmp)
    {
        HASH_DELETE(hh, d->fields, f);
        free(f);
    }
    free(d);
}

static dictionary *dict_new(void)
{
    dictionary *d = calloc(1, sizeof(*d));
    if (d) {
        d->coll.destroy = dict_destroy;
        d->coll.bytes = store_block_cost(d);
    }
    return d;
}

/* A field block holding `field` and `value`, not in any table, or NULL. */
static dict_field *field_new(const uint8_t *field, size_t field_len, const uint8_t *value,
                             size_t value_len)
{
    dict_field *f = malloc(sizeof(*f) + field_len + value_len);
    if (!f)
        return NULL;
    memset(f, 0, sizeof(*f));
    f->field_len = field_len;
    f->value_len = value_len;
    /* An empty field or value may come as NULL: memcpy may not take it. */
    if (field_len)
        memcpy(f->data, field, field_len);
    f->value = f->data + field_len;
    if (value_len)
        memcpy(f->value, value, value_len);
    f->cost = store_block_cost(f) + STORE_ITEM_OVERHEAD;
    return f;
}

static dict_field *field_find(const dictionary *d, const uint8_t *field, size_t len)
{
    dict_field *f = NULL;
    HASH_FIND(hh, d->fields, field, len, f);
    return f;
}

/* The dictionary item at `key` for a read: 0 with *ret_it (NULL when
 * missing), or -1 with the error reply set. */
static int find_for_read(momento_local *s, store_cache *c, srv_reply *r,
                         const ProtobufCBinaryData *key, store_item **ret_it)
{
    if (!srv_check_key(r, key))
        return -1;
    if (store_coll_find(&s->store, c, key->data, key->len, STORE_DICTIONARY, store_now_ms(),
                        ret_it) != 0) {
        srv_reply_wrong_type(r);
        return -1;
    }
    return 0;
}

/* ---- Writing fields, all or nothing ---------------------------------- */

/* One field written: the block put in the table, and the block it
 * replaced there (NULL: the field is new), kept until the write commits. */
typedef struct dict_undo {
    dict_field *added;
    dict_field *replaced;
} dict_undo;

/* Puts `f` in place of the field of its name, recording the swap. */
static void put_field(dictionary *d, dict_field *f, dict_undo *u)
{
    dict_field *old = NULL;
    HASH_REPLACE(hh, d->fields, data, f->field_len, f, old);
    u->added = f;
    u->replaced = old;
    d->wire += pair_wire(f) - (old ? pair_wire(old) : 0);
}

/* Undoes the first `n` swaps, latest first, so that a field the request
 * names twice gets its original block back. */
static void rollback(dictionary *d, dict_undo *undo, size_t n)
{
    while (n-- > 0) {
        HASH_DELETE(hh, d->fields, undo[n].added);
        d->wire -= pair_wire(undo[n].added);
        free(undo[n].added);
        if (undo[n].replaced) {
            HASH_ADD_KEYPTR(hh, d->fields, undo[n].replaced->data, undo[n].replaced->field_len,
                            undo[n].replaced);
            d->wire += pair_wire(undo[n].replaced);
        }
        srv_yield();
    }
}

static void commit(dict_undo *undo, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(undo[i].replaced);
        srv_yield();
    }
}

/* Writes `n` field/value pairs to the dictionary at `key`, creating it
 * (with ttl_ms) when missing, or refreshing its TTL when asked. Either every
 * pair is written or, with the error reply set, none: out of memory, or a
 * dictionary --max-memory cannot hold. Returns 0 or -1. */
static int write_fields(momento_local *s, store_cache *c, srv_reply *r,
                        const ProtobufCBinaryData *key,
                        CacheClient__DictionaryFieldValuePair *const *pairs, size_t n,
                        uint64_t ttl_ms, bool refresh, int64_t now)
{
    store_item *it;
    if (store_coll_find(&s->store, c, key->data, key->len, STORE_DICTIONARY, now, &it) != 0) {
        srv_reply_wrong_type(r);
        return -1;
    }
    if (!it && n == 0)
        return 0; /* nothing to create: an empty dictionary does not exist */
    dictionary *d = it ? (dictionary *)it->coll : dict_new();
    dict_undo *undo = n ? calloc(n, sizeof(*undo)) : NULL;
    if (!d || (n && !undo)) {
        if (!it && d)
            dict_destroy(&d->coll);
        free(undo);
        srv_reply_no_memory(r);
        return -1;
    }
    uint64_t bytes = d->coll.bytes;
    size_t done = 0;
    for (; done < n; done++) {
        const CacheClient__DictionaryFieldValuePair *p = pairs[done];
        dict_field *f = field_new(bytes_of(&p->field), p->field.len, bytes_of(&p->value),
                                  p->value.len);
        if (!f)
            break;
        put_field(d, f, &undo[done]);
        bytes += f->cost - (undo[done].replaced ? undo[done].replaced->cost : 0);
        srv_yield();
    }
    bool existed = it != NULL;
    int rc = done < n ? STORE_NO_MEMORY : 0;
    if (rc == 0 && !srv_check_collection_size(s, r, key->len, d->wire)) {
        rollback(d, undo, done);
        if (!existed)
            dict_destroy(&d->coll);
        free(undo);
        return -1;
    }
    if (rc == 0 && existed) {
        rc = store_coll_resize(&s->store, it, bytes);
    } else if (rc == 0) {
        d->coll.bytes = bytes;
        rc = store_coll_add(&s->store, c, key->data, key->len, STORE_DICTIONARY, &d->coll, ttl_ms,
                            now, &it);
    }
    if (rc != 0) {
        rollback(d, undo, done);
        if (!existed)
            dict_destroy(&d->coll);
        srv_reply_store_error(s, r, rc, (size_t)bytes);
    } else {
        commit(undo, done);
        if (existed)
            store_coll_refresh_ttl(it, ttl_ms, refresh, now);
    }
    free(undo);
    return rc == 0 ? 0 : -1;
}

/* ---- The RPCs ---------------------------------------------------------- */

/* The checks every write makes before it looks at the store: a key the
 * item limits allow, and each field with its value within the element
 * limit. */
static bool check_pairs(momento_local *s, srv_reply *r, const ProtobufCBinaryData *key,
                        CacheClient__DictionaryFieldValuePair *const *pairs, size_t n)
{
    if (!srv_check_item(s, r, key, 0))
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!srv_check_element(r, pairs[i]->field.len + pairs[i]->value.len))
            return false;
        srv_yield();
    }
    return true;
}

void srv_dictionary_set(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                        srv_reply *r)
{
    const CacheClient__DictionarySetRequest *req = (const CacheClient__DictionarySetRequest *)msg;
    if (!check_pairs(s, r, &req->dictionary_name, req->items, req->n_items))
        return;
    if (write_fields(s, c, r, &req->dictionary_name, req->items, req->n_items,
                     req->ttl_milliseconds, req->refresh_ttl, store_now_ms()) != 0)
        return;
    CacheClient__DictionarySetResponse resp = CACHE_CLIENT____DICTIONARY_SET_RESPONSE__INIT;
    srv_reply_add(r, &resp.base);
}

/* The field's current number (0 when the dictionary or the field is
 * missing) plus the amount, in *out; false with the error reply set. */
static bool incremented(store_item *it, const ProtobufCBinaryData *field, int64_t amount,
                        srv_reply *r, int64_t *out)
{
    int64_t value = 0;
    dict_field *f = it ? field_find((dictionary *)it->coll, bytes_of(field), field->len) : NULL;
    if (f && !srv_parse_int64(f->value, f->value_len, &value)) {
        srv_reply_error(r, GRPC_STATUS_FAILED_PRECONDITION, NULL,
                        "the field's value is not a base-10 64-bit integer");
        return false;
    }
    if (__builtin_add_overflow(value, amount, &value)) {
        srv_reply_error(r, GRPC_STATUS_FAILED_PRECONDITION, NULL,
                        "incrementing would overflow a 64-bit integer");
        return false;
    }
    *out = value;
    return true;
}

void srv_dictionary_increment(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                              srv_reply *r)
{
    const CacheClient__DictionaryIncrementRequest *req =
        (const CacheClient__DictionaryIncrementRequest *)msg;
    /* 20 digits and a sign: the longest text an int64 takes. */
    if (!srv_check_item(s, r, &req->dictionary_name, 0) ||
        !srv_check_element(r, req->field.len + 21))
        return;
    int64_t now = store_now_ms();
    store_item *it;
    if (store_coll_find(&s->store, c, req->dictionary_name.data, req->dictionary_name.len,
                        STORE_DICTIONARY, now, &it) != 0) {
        srv_reply_wrong_type(r);
        return;
    }
    int64_t value;
    if (!incremented(it, &req->field, req->amount, r, &value))
        return;
    char text[24];
    int len = snprintf(text, sizeof(text), "%" PRId64, value);
    CacheClient__DictionaryFieldValuePair pair = CACHE_CLIENT____DICTIONARY_FIELD_VALUE_PAIR__INIT;
    pair.field = req->field;
    pair.value.data = (uint8_t *)text;
    pair.value.len = (size_t)len;
    CacheClient__DictionaryFieldValuePair *pairs[] = {&pair};
    if (write_fields(s, c, r, &req->dictionary_name, pairs, 1, req->ttl_milliseconds,
                     req->refresh_ttl, now) != 0)
        return;
    CacheClient__DictionaryIncrementResponse resp = CACHE_CLIENT____DICTIONARY_INCREMENT_RESPONSE__INIT;
    resp.value = value;
    srv_reply_add(r, &resp.base);
}

void srv_dictionary_get(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__DictionaryGetRequest *req = (const CacheClient__DictionaryGetRequest *)msg;
    store_item *it;
    if (find_for_read(s, c, r, &req->dictionary_name, &it) != 0)
        return;
    CacheClient__DictionaryGetResponse resp = CACHE_CLIENT____DICTIONARY_GET_RESPONSE__INIT;
    CacheClient__DictionaryGetResponse__Missing missing =
        CACHE_CLIENT____DICTIONARY_GET_RESPONSE____MISSING__INIT;
    if (!it) {
        resp.dictionary_case = CACHE_CLIENT____DICTIONARY_GET_RESPONSE__DICTIONARY_MISSING;
        resp.missing = &missing;
        srv_reply_add(r, &resp.base);
        return;
    }
    /* One part per requested field, in the request's order. */
    size_t n = req->n_fields;
    CacheClient__DictionaryGetResponse__DictionaryGetResponsePart *parts =
        malloc((n ? n : 1) * sizeof(*parts));
    CacheClient__DictionaryGetResponse__DictionaryGetResponsePart **ptrs =
        malloc((n ? n : 1) * sizeof(*ptrs));
    if (!parts || !ptrs) {
        free(parts);
        free(ptrs);
        srv_reply_no_memory(r);
        return;
    }
    const dictionary *d = (const dictionary *)it->coll;
    for (size_t i = 0; i < n; i++) {
        CacheClient__DictionaryGetResponse__DictionaryGetResponsePart init =
            CACHE_CLIENT____DICTIONARY_GET_RESPONSE____DICTIONARY_GET_RESPONSE_PART__INIT;
        parts[i] = init;
        const dict_field *f = field_find(d, bytes_of(&req->fields[i]), req->fields[i].len);
        parts[i].result = f ? CACHE_CLIENT__ECACHE_RESULT__Hit : CACHE_CLIENT__ECACHE_RESULT__Miss;
        if (f) {
            parts[i].cache_body.data = f->value;
            parts[i].cache_body.len = f->value_len;
        }
        ptrs[i] = &parts[i];
        srv_yield();
    }
    CacheClient__DictionaryGetResponse__Found found =
        CACHE_CLIENT____DICTIONARY_GET_RESPONSE____FOUND__INIT;
    found.n_items = n;
    found.items = ptrs;
    resp.dictionary_case = CACHE_CLIENT____DICTIONARY_GET_RESPONSE__DICTIONARY_FOUND;
    resp.found = &found;
    srv_reply_add(r, &resp.base);
    free(parts);
    free(ptrs);
}

void srv_dictionary_fetch(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                          srv_reply *r)
{
    const CacheClient__DictionaryFetchRequest *req =
        (const CacheClient__DictionaryFetchRequest *)msg;
    store_item *it;
    if (find_for_read(s, c, r, &req->dictionary_name, &it) != 0)
        return;
    CacheClient__DictionaryFetchResponse resp = CACHE_CLIENT____DICTIONARY_FETCH_RESPONSE__INIT;
    CacheClient__DictionaryFetchResponse__Missing missing =
        CACHE_CLIENT____DICTIONARY_FETCH_RESPONSE____MISSING__INIT;
    if (!it) {
        resp.dictionary_case = CACHE_CLIENT____DICTIONARY_FETCH_RESPONSE__DICTIONARY_MISSING;
        resp.missing = &missing;
        srv_reply_add(r, &resp.base);
        return;
    }
    const dictionary *d = (const dictionary *)it->coll;
    size_t n = HASH_COUNT(d->fields);
    CacheClient__DictionaryFieldValuePair *pairs = malloc((n ? n : 1) * sizeof(*pairs));
    CacheClient__DictionaryFieldValuePair **ptrs = malloc((n ? n : 1) * sizeof(*ptrs));
    if (!pairs || !ptrs) {
        free(pairs);
        free(ptrs);
        srv_reply_no_memory(r);
        return;
    }
    size_t i = 0;
    for (const dict_field *f = d->fields; f; f = f->hh.next, i++) {
        CacheClient__DictionaryFieldValuePair init =
            CACHE_CLIENT____DICTIONARY_FIELD_VALUE_PAIR__INIT;
        pairs[i] = init;
        pairs[i].field.data = (uint8_t *)f->data;
        pairs[i].field.len = f->field_len;
        pairs[i].value.data = f->value;
        pairs[i].value.len = f->value_len;
        ptrs[i] = &pairs[i];
        srv_yield();
    }
    CacheClient__DictionaryFetchResponse__Found found =
        CACHE_CLIENT____DICTIONARY_FETCH_RESPONSE____FOUND__INIT;
    found.n_items = n;
    found.items = ptrs;
    resp.dictionary_case = CACHE_CLIENT____DICTIONARY_FETCH_RESPONSE__DICTIONARY_FOUND;
    resp.found = &found;
    srv_reply_add(r, &resp.base);
    free(pairs);
    free(ptrs);
}

/* Removes the named fields; the dictionary goes when its last field does.
 * Shrinking never needs room, so this cannot fail. */
static void remove_fields(momento_local *s, store_item *it, const ProtobufCBinaryData *fields,
                          size_t n)
{
    dictionary *d = (dictionary *)it->coll;
    uint64_t bytes = d->coll.bytes;
    for (size_t i = 0; i < n; i++) {
        dict_field *f = field_find(d, bytes_of(&fields[i]), fields[i].len);
        if (f) {
            HASH_DELETE(hh, d->fields, f);
            bytes -= f->cost;
            d->wire -= pair_wire(f);
            free(f);
        }
        srv_yield();
    }
    if (!d->fields)
        store_remove(&s->store, it);
    else
        store_coll_resize(&s->store, it, bytes);
}

/* Removing from a missing dictionary succeeds, as deleting a missing key
 * does. */
void srv_dictionary_delete(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                           srv_reply *r)
{
    const CacheClient__DictionaryDeleteRequest *req =
        (const CacheClient__DictionaryDeleteRequest *)msg;
    if (req->delete_case != CACHE_CLIENT____DICTIONARY_DELETE_REQUEST__DELETE_SOME &&
        req->delete_case != CACHE_CLIENT____DICTIONARY_DELETE_REQUEST__DELETE_ALL) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "DictionaryDelete needs some fields or all");
        return;
    }
    store_item *it;
    if (find_for_read(s, c, r, &req->dictionary_name, &it) != 0)
        return;
    if (it && req->delete_case == CACHE_CLIENT____DICTIONARY_DELETE_REQUEST__DELETE_ALL)
        store_remove(&s->store, it);
    else if (it)
        remove_fields(s, it, req->some->fields, req->some->n_fields);
    CacheClient__DictionaryDeleteResponse resp = CACHE_CLIENT____DICTIONARY_DELETE_RESPONSE__INIT;
    srv_reply_add(r, &resp.base);
}

void srv_dictionary_length(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                           srv_reply *r)
{
    const CacheClient__DictionaryLengthRequest *req =
        (const CacheClient__DictionaryLengthRequest *)msg;
    store_item *it;
    if (find_for_read(s, c, r, &req->dictionary_name, &it) != 0)
        return;
    CacheClient__DictionaryLengthResponse resp = CACHE_CLIENT____DICTIONARY_LENGTH_RESPONSE__INIT;
    CacheClient__DictionaryLengthResponse__Found found =
        CACHE_CLIENT____DICTIONARY_LENGTH_RESPONSE____FOUND__INIT;
    CacheClient__DictionaryLengthResponse__Missing missing =
        CACHE_CLIENT____DICTIONARY_LENGTH_RESPONSE____MISSING__INIT;
    if (it) {
        size_t n = HASH_COUNT(((const dictionary *)it->coll)->fields);
        found.length = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
        resp.dictionary_case = CACHE_CLIENT____DICTIONARY_LENGTH_RESPONSE__DICTIONARY_FOUND;
        resp.found = &found;
    } else {
        resp.dictionary_case = CACHE_CLIENT____DICTIONARY_LENGTH_RESPONSE__DICTIONARY_MISSING;
        resp.missing = &missing;
    }
    srv_reply_add(r, &resp.base);
}
