/* Shared by the collection families: see collection.h. */
#include "ops/collection.h"

#include "base/alloc.h"
#include "model/config.h"

#include <stdlib.h>

int momento__check_coll_request(const momento_client *c, const char *cache, const void *name,
                                size_t name_len, const momento_request_options *opts,
                                momento_callback cb)
{
    return momento__check_key_request(c, cache, name, name_len, opts, cb);
}

int momento__check_blob(momento__size *sz, const void *p, size_t len)
{
    if (!p && len)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "an element is NULL with a length of %zu", len);
    /* The bytes, and a field's tag and length (a nested message's too). */
    if (len > MOMENTO__MAX_REQUEST_BYTES - sz->total - 16)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the request would be over %d bytes",
                               MOMENTO__MAX_REQUEST_BYTES);
    sz->total += len + 16;
    return MOMENTO_OK;
}

int momento__check_blobs(momento__size *sz, const void *const *items, const size_t *lens, size_t n)
{
    if (!items || !lens)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the array of elements or of their lengths is NULL");
    if (n == 0)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "no elements");
    for (size_t i = 0; i < n; i++)
        MOMENTO__CHECK(momento__check_blob(sz, items[i], lens[i]));
    return MOMENTO_OK;
}

int momento__check_slice(int32_t start, int32_t end)
{
    if ((end >= 0 && end <= start) || (end <= start && start < 0))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the slice [%d, %d) is empty or reversed", (int)start,
                               (int)end);
    return MOMENTO_OK;
}

int momento__coll_ttl(const momento_client *c, const momento_collection_ttl *ttl,
                      uint64_t *ret_ttl_ms, protobuf_c_boolean *ret_refresh)
{
    static const momento_collection_ttl dflt = MOMENTO_COLLECTION_TTL_DEFAULT;
    if (!ttl)
        ttl = &dflt;
    MOMENTO__CHECK(momento__check_ttl(ttl->ttl_ms));
    *ret_ttl_ms = momento__effective_ttl(&c->cfg, ttl->ttl_ms);
    *ret_refresh = ttl->refresh != 0;
    return MOMENTO_OK;
}

ProtobufCBinaryData *momento__blob_array(const void *const *items, const size_t *lens, size_t n)
{
    ProtobufCBinaryData *a = momento__malloc(n * sizeof(*a));
    if (a)
        for (size_t i = 0; i < n; i++)
            a[i] = momento__bytes(items[i], lens[i]);
    return a;
}

momento_result *momento__items_new(momento__scratch *scratch, size_t n, momento_outcome outcome)
{
    momento_result *items = momento__calloc(n + 1, sizeof(*items));
    if (!items)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        items[i].message = "";
        items[i].outcome = outcome;
    }
    scratch->mem = items;
    return items;
}

typedef struct one_item {
    momento_callback cb;
    void *userdata;
} one_item;

void *momento__one_item_new(momento_callback cb, void *userdata)
{
    one_item *one = momento__malloc(sizeof(*one));
    if (one) {
        one->cb = cb;
        one->userdata = userdata;
    }
    return one;
}

void momento__one_item_done(const momento_result *r, void *userdata)
{
    one_item one = *(one_item *)userdata;
    free(userdata);
    momento_result single = *r;
    single.items = NULL;
    single.n_items = 0;
    if (r->error == MOMENTO_OK && r->outcome == MOMENTO_OUTCOME_HIT) {
        if (r->n_items != 1) {
            single.error = MOMENTO_ERR_BAD_RESPONSE;
            single.outcome = MOMENTO_OUTCOME_ERROR;
            single.message = "the reply did not answer the one element asked for";
        } else {
            const momento_result *item = &r->items[0];
            single.outcome = item->outcome;
            single.value = item->value;
            single.value_len = item->value_len;
            single.field = item->field;
            single.field_len = item->field_len;
            single.score = item->score;
        }
    }
    one.cb(&single, one.userdata);
}

int momento__coll_read(momento__target t, momento__rpc_id rpc, momento__decode_fn decode,
                       const char *cache, const void *name, size_t name_len,
                       const ProtobufCMessage *req, const momento_request_options *opts,
                       momento_callback cb, void *userdata)
{
    if (t.co)
        return momento__coalesce_read(t.co, rpc, decode, cache, name, name_len, req, opts, cb,
                                      userdata);
    return momento__call_start(t.client, rpc, decode, cache, req, opts, cb, userdata);
}

int momento__coll_write(momento_client *c, momento__rpc_id rpc, momento__decode_fn decode,
                        const char *cache, const void *name, size_t name_len,
                        const ProtobufCMessage *req, const momento_request_options *opts,
                        momento_callback cb, void *userdata)
{
    momento__client_note_write(c, NULL, cache, name, name_len);
    return momento__call_start(c, rpc, decode, cache, req, opts, cb, userdata);
}

int momento__decode_values(momento_result *r, momento__scratch *scratch, size_t n,
                           const ProtobufCBinaryData *values)
{
    momento_result *items = momento__items_new(scratch, n, MOMENTO_OUTCOME_HIT);
    if (!items)
        return MOMENTO_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) {
        items[i].value = momento__data(&values[i]);
        items[i].value_len = values[i].len;
    }
    r->items = items;
    r->n_items = n;
    r->outcome = MOMENTO_OUTCOME_HIT;
    return MOMENTO_OK;
}
