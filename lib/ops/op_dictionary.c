/* Dictionaries: fields and values under one key (Momento's Dictionary*
 * RPCs). The one-field calls are the many-field ones with n = 1, as the
 * official SDKs send them. */
#include "ops/collection.h"

#include "cacheclient.pb-c.h"

#include <stdlib.h>
#include <string.h>

MOMENTO__DECODER(dictionary_get)
{
    MOMENTO__UNPACK_FOUND(CacheClient__DictionaryGetResponse, DICTIONARY_GET, dictionary_case,
                          CACHE_CLIENT____DICTIONARY_GET_RESPONSE__DICTIONARY);
    momento_result *items = momento__items_new(scratch, m->found->n_items, MOMENTO_OUTCOME_MISS);
    if (!items)
        return MOMENTO_ERR_NO_MEMORY;
    for (size_t i = 0; i < m->found->n_items; i++) {
        const CacheClient__DictionaryGetResponse__DictionaryGetResponsePart *p =
            m->found->items[i];
        if (p->result == CACHE_CLIENT__ECACHE_RESULT__Hit) {
            items[i].outcome = MOMENTO_OUTCOME_HIT;
            items[i].value = momento__data(&p->cache_body);
            items[i].value_len = p->cache_body.len;
        } else if (p->result != CACHE_CLIENT__ECACHE_RESULT__Miss) {
            return MOMENTO_ERR_BAD_RESPONSE;
        }
    }
    r->items = items;
    r->n_items = m->found->n_items;
    r->outcome = MOMENTO_OUTCOME_HIT;
    return MOMENTO_OK;
}

MOMENTO__DECODER(dictionary_fetch)
{
    MOMENTO__UNPACK_FOUND(CacheClient__DictionaryFetchResponse, DICTIONARY_FETCH, dictionary_case,
                          CACHE_CLIENT____DICTIONARY_FETCH_RESPONSE__DICTIONARY);
    momento_result *items = momento__items_new(scratch, m->found->n_items, MOMENTO_OUTCOME_HIT);
    if (!items)
        return MOMENTO_ERR_NO_MEMORY;
    for (size_t i = 0; i < m->found->n_items; i++) {
        const CacheClient__DictionaryFieldValuePair *p = m->found->items[i];
        items[i].field = momento__data(&p->field);
        items[i].field_len = p->field.len;
        items[i].value = momento__data(&p->value);
        items[i].value_len = p->value.len;
    }
    r->items = items;
    r->n_items = m->found->n_items;
    r->outcome = MOMENTO_OUTCOME_HIT;
    return MOMENTO_OK;
}

MOMENTO__EMPTY_DECODER(dictionary_set, MOMENTO_OUTCOME_SUCCESS)

MOMENTO__NUMBER_DECODER(dictionary_increment, DICTIONARY_INCREMENT,
                        CacheClient__DictionaryIncrementResponse, int_value, value)

MOMENTO__EMPTY_DECODER(dictionary_delete, MOMENTO_OUTCOME_SUCCESS)

MOMENTO__LENGTH_READ_DECODER(dictionary_length, DICTIONARY_LENGTH,
                             CacheClient__DictionaryLengthResponse, dictionary_case,
                             CACHE_CLIENT____DICTIONARY_LENGTH_RESPONSE__DICTIONARY)

int momento_dictionary_set_fields(momento_client *c, const char *cache, const void *name,
                                  size_t name_len, const void *const *fields,
                                  const size_t *field_lens, const void *const *values,
                                  const size_t *value_lens, size_t n,
                                  const momento_collection_ttl *ttl,
                                  const momento_request_options *opts, momento_callback cb,
                                  void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blobs(&sz, fields, field_lens, n));
    MOMENTO__CHECK(momento__check_blobs(&sz, values, value_lens, n));
    CacheClient__DictionarySetRequest req = CACHE_CLIENT____DICTIONARY_SET_REQUEST__INIT;
    MOMENTO__CHECK(momento__coll_ttl(c, ttl, &req.ttl_milliseconds, &req.refresh_ttl));
    req.dictionary_name = momento__bytes(name, name_len);
    CacheClient__DictionaryFieldValuePair *pairs = momento__malloc(n * sizeof(*pairs));
    CacheClient__DictionaryFieldValuePair **ptrs = momento__malloc(n * sizeof(*ptrs));
    int rc = MOMENTO_ERR_NO_MEMORY;
    if (pairs && ptrs) {
        for (size_t i = 0; i < n; i++) {
            cache_client____dictionary_field_value_pair__init(&pairs[i]);
            pairs[i].field = momento__bytes(fields[i], field_lens[i]);
            pairs[i].value = momento__bytes(values[i], value_lens[i]);
            ptrs[i] = &pairs[i];
        }
        req.n_items = n;
        req.items = ptrs;
        rc = momento__coll_write(c, MOMENTO__RPC_DICTIONARY_SET, momento__decode_dictionary_set,
                                 cache, name, name_len, &req.base, opts, cb, userdata);
    }
    free(pairs); /* the request was packed at submit */
    free(ptrs);
    return rc;
}

int momento_dictionary_set_field(momento_client *c, const char *cache, const void *name,
                                 size_t name_len, const void *field, size_t field_len,
                                 const void *value, size_t value_len,
                                 const momento_collection_ttl *ttl,
                                 const momento_request_options *opts, momento_callback cb,
                                 void *userdata)
{
    return momento_dictionary_set_fields(c, cache, name, name_len, &field, &field_len, &value,
                                         &value_len, 1, ttl, opts, cb, userdata);
}

/* The reply to a get of fields answers them by position only: this puts
 * each requested field on its item (a copy of the fields, and the item
 * array the callback sees, made at submit so the callback cannot fail). */
typedef struct fields_answer {
    momento_callback cb;
    void *userdata;
    size_t n;
    momento_result *items;   /* n, filled at the callback */
    uint8_t *bytes;          /* the fields, back to back */
    size_t lens[];
} fields_answer;

static void fields_answer_done(const momento_result *r, void *userdata)
{
    fields_answer *fa = userdata;
    momento_result out = *r;
    if (r->error == MOMENTO_OK && r->outcome == MOMENTO_OUTCOME_HIT) {
        if (r->n_items != fa->n) {
            momento__result_local_error(&out, MOMENTO_ERR_BAD_RESPONSE,
                                        "the reply did not answer each field asked for");
            out.grpc_status = r->grpc_status;
            out.attempts = r->attempts;
        } else {
            const uint8_t *f = fa->bytes;
            for (size_t i = 0; i < fa->n; i++) {
                fa->items[i] = r->items[i];
                fa->items[i].field = f;
                fa->items[i].field_len = fa->lens[i];
                f += fa->lens[i];
            }
            out.items = fa->items;
        }
    }
    fa->cb(&out, fa->userdata);
    free(fa);
}

static int get_fields(momento__target t, const char *cache, const void *name, size_t name_len,
                      const void *const *fields, const size_t *field_lens, size_t n,
                      const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blobs(&sz, fields, field_lens, n));
    /* One block: the struct, lens, items, then the field bytes (checked
     * above to fit one request, so no overflow). */
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += field_lens[i];
    size_t at_items = sizeof(fields_answer) + n * sizeof(size_t);
    at_items = (at_items + _Alignof(momento_result) - 1) & ~(_Alignof(momento_result) - 1);
    fields_answer *fa = momento__malloc(at_items + n * sizeof(momento_result) + total + 1);
    CacheClient__DictionaryGetRequest req = CACHE_CLIENT____DICTIONARY_GET_REQUEST__INIT;
    req.fields = momento__blob_array(fields, field_lens, n);
    if (!fa || !req.fields) {
        free(fa);
        free(req.fields);
        return MOMENTO_ERR_NO_MEMORY;
    }
    fa->cb = cb;
    fa->userdata = userdata;
    fa->n = n;
    fa->items = (momento_result *)((uint8_t *)fa + at_items);
    fa->bytes = (uint8_t *)(fa->items + n);
    uint8_t *p = fa->bytes;
    for (size_t i = 0; i < n; i++) {
        fa->lens[i] = field_lens[i];
        if (field_lens[i])
            memcpy(p, fields[i], field_lens[i]);
        p += field_lens[i];
    }
    req.dictionary_name = momento__bytes(name, name_len);
    req.n_fields = n;
    int rc = momento__coll_read(t, MOMENTO__RPC_DICTIONARY_GET, momento__decode_dictionary_get,
                                cache, name, name_len, &req.base, opts, fields_answer_done, fa);
    free(req.fields);
    if (rc != MOMENTO_OK)
        free(fa);
    return rc;
}

int momento_dictionary_get_fields(momento_client *c, const char *cache, const void *name,
                                  size_t name_len, const void *const *fields,
                                  const size_t *field_lens, size_t n,
                                  const momento_request_options *opts, momento_callback cb,
                                  void *userdata)
{
    return get_fields(momento__to_client(c), cache, name, name_len, fields, field_lens, n, opts,
                      cb, userdata);
}

int momento_coalescing_dictionary_get_fields(momento_coalescer *co, const char *cache,
                                             const void *name, size_t name_len,
                                             const void *const *fields, const size_t *field_lens,
                                             size_t n, const momento_request_options *opts,
                                             momento_callback cb, void *userdata)
{
    return get_fields(momento__to_coalescer(co), cache, name, name_len, fields, field_lens, n,
                      opts, cb, userdata);
}

static int get_field(momento__target t, const char *cache, const void *name, size_t name_len,
                     const void *field, size_t field_len, const momento_request_options *opts,
                     momento_callback cb, void *userdata)
{
    /* Checked here too, so that no allocation precedes a refusal. */
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    void *one = momento__one_item_new(cb, userdata);
    if (!one)
        return MOMENTO_ERR_NO_MEMORY;
    int rc = get_fields(t, cache, name, name_len, &field, &field_len, 1, opts,
                        momento__one_item_done, one);
    if (rc != MOMENTO_OK)
        free(one);
    return rc;
}

int momento_dictionary_get_field(momento_client *c, const char *cache, const void *name,
                                 size_t name_len, const void *field, size_t field_len,
                                 const momento_request_options *opts, momento_callback cb,
                                 void *userdata)
{
    return get_field(momento__to_client(c), cache, name, name_len, field, field_len, opts, cb,
                     userdata);
}

int momento_coalescing_dictionary_get_field(momento_coalescer *co, const char *cache,
                                            const void *name, size_t name_len, const void *field,
                                            size_t field_len, const momento_request_options *opts,
                                            momento_callback cb, void *userdata)
{
    return get_field(momento__to_coalescer(co), cache, name, name_len, field, field_len, opts, cb,
                     userdata);
}

static int fetch(momento__target t, const char *cache, const void *name, size_t name_len,
                 const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    CacheClient__DictionaryFetchRequest req = CACHE_CLIENT____DICTIONARY_FETCH_REQUEST__INIT;
    req.dictionary_name = momento__bytes(name, name_len);
    return momento__coll_read(t, MOMENTO__RPC_DICTIONARY_FETCH, momento__decode_dictionary_fetch,
                              cache, name, name_len, &req.base, opts, cb, userdata);
}

int momento_dictionary_fetch(momento_client *c, const char *cache, const void *name,
                             size_t name_len, const momento_request_options *opts,
                             momento_callback cb, void *userdata)
{
    return fetch(momento__to_client(c), cache, name, name_len, opts, cb, userdata);
}

int momento_coalescing_dictionary_fetch(momento_coalescer *co, const char *cache,
                                        const void *name, size_t name_len,
                                        const momento_request_options *opts, momento_callback cb,
                                        void *userdata)
{
    return fetch(momento__to_coalescer(co), cache, name, name_len, opts, cb, userdata);
}

int momento_dictionary_increment(momento_client *c, const char *cache, const void *name,
                                 size_t name_len, const void *field, size_t field_len,
                                 int64_t amount, const momento_collection_ttl *ttl,
                                 const momento_request_options *opts, momento_callback cb,
                                 void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blob(&sz, field, field_len));
    CacheClient__DictionaryIncrementRequest req =
        CACHE_CLIENT____DICTIONARY_INCREMENT_REQUEST__INIT;
    MOMENTO__CHECK(momento__coll_ttl(c, ttl, &req.ttl_milliseconds, &req.refresh_ttl));
    req.dictionary_name = momento__bytes(name, name_len);
    req.field = momento__bytes(field, field_len);
    req.amount = amount;
    return momento__coll_write(c, MOMENTO__RPC_DICTIONARY_INCREMENT,
                               momento__decode_dictionary_increment, cache, name, name_len,
                               &req.base, opts, cb, userdata);
}

int momento_dictionary_remove_fields(momento_client *c, const char *cache, const void *name,
                                     size_t name_len, const void *const *fields,
                                     const size_t *field_lens, size_t n,
                                     const momento_request_options *opts, momento_callback cb,
                                     void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blobs(&sz, fields, field_lens, n));
    CacheClient__DictionaryDeleteRequest req = CACHE_CLIENT____DICTIONARY_DELETE_REQUEST__INIT;
    CacheClient__DictionaryDeleteRequest__Some some =
        CACHE_CLIENT____DICTIONARY_DELETE_REQUEST__SOME__INIT;
    req.dictionary_name = momento__bytes(name, name_len);
    some.fields = momento__blob_array(fields, field_lens, n);
    if (!some.fields)
        return MOMENTO_ERR_NO_MEMORY;
    some.n_fields = n;
    req.delete_case = CACHE_CLIENT____DICTIONARY_DELETE_REQUEST__DELETE_SOME;
    req.some = &some;
    int rc =
        momento__coll_write(c, MOMENTO__RPC_DICTIONARY_DELETE, momento__decode_dictionary_delete,
                            cache, name, name_len, &req.base, opts, cb, userdata);
    free(some.fields);
    return rc;
}

int momento_dictionary_remove_field(momento_client *c, const char *cache, const void *name,
                                    size_t name_len, const void *field, size_t field_len,
                                    const momento_request_options *opts, momento_callback cb,
                                    void *userdata)
{
    return momento_dictionary_remove_fields(c, cache, name, name_len, &field, &field_len, 1, opts,
                                            cb, userdata);
}

static int length(momento__target t, const char *cache, const void *name, size_t name_len,
                  const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    CacheClient__DictionaryLengthRequest req = CACHE_CLIENT____DICTIONARY_LENGTH_REQUEST__INIT;
    req.dictionary_name = momento__bytes(name, name_len);
    return momento__coll_read(t, MOMENTO__RPC_DICTIONARY_LENGTH, momento__decode_dictionary_length,
                              cache, name, name_len, &req.base, opts, cb, userdata);
}

int momento_dictionary_length(momento_client *c, const char *cache, const void *name,
                              size_t name_len, const momento_request_options *opts,
                              momento_callback cb, void *userdata)
{
    return length(momento__to_client(c), cache, name, name_len, opts, cb, userdata);
}

int momento_coalescing_dictionary_length(momento_coalescer *co, const char *cache,
                                         const void *name, size_t name_len,
                                         const momento_request_options *opts, momento_callback cb,
                                         void *userdata)
{
    return length(momento__to_coalescer(co), cache, name, name_len, opts, cb, userdata);
}

/* Blocking forms. */

int momento_dictionary_set_field_sync(momento_client *c, const char *cache, const void *name,
                                      size_t name_len, const void *field, size_t field_len,
                                      const void *value, size_t value_len,
                                      const momento_collection_ttl *ttl,
                                      const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_dictionary_set_field(c, cache, name, name_len, field, field_len, value,
                                               value_len, ttl, opts, MOMENTO__SYNC_CB));
}

int momento_dictionary_set_fields_sync(momento_client *c, const char *cache, const void *name,
                                       size_t name_len, const void *const *fields,
                                       const size_t *field_lens, const void *const *values,
                                       const size_t *value_lens, size_t n,
                                       const momento_collection_ttl *ttl,
                                       const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_dictionary_set_fields(c, cache, name, name_len, fields, field_lens,
                                                values, value_lens, n, ttl, opts,
                                                MOMENTO__SYNC_CB));
}

int momento_dictionary_get_field_sync(momento_client *c, const char *cache, const void *name,
                                      size_t name_len, const void *field, size_t field_len,
                                      const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_dictionary_get_field(c, cache, name, name_len, field, field_len, opts,
                                               MOMENTO__SYNC_CB));
}

int momento_dictionary_get_fields_sync(momento_client *c, const char *cache, const void *name,
                                       size_t name_len, const void *const *fields,
                                       const size_t *field_lens, size_t n,
                                       const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_dictionary_get_fields(c, cache, name, name_len, fields, field_lens, n,
                                                opts, MOMENTO__SYNC_CB));
}

int momento_dictionary_fetch_sync(momento_client *c, const char *cache, const void *name,
                                  size_t name_len, const momento_request_options *opts,
                                  momento_result **ret)
{
    MOMENTO__SYNC(momento_dictionary_fetch(c, cache, name, name_len, opts, MOMENTO__SYNC_CB));
}

int momento_dictionary_increment_sync(momento_client *c, const char *cache, const void *name,
                                      size_t name_len, const void *field, size_t field_len,
                                      int64_t amount, const momento_collection_ttl *ttl,
                                      const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_dictionary_increment(c, cache, name, name_len, field, field_len, amount,
                                               ttl, opts, MOMENTO__SYNC_CB));
}

int momento_dictionary_remove_field_sync(momento_client *c, const char *cache, const void *name,
                                         size_t name_len, const void *field, size_t field_len,
                                         const momento_request_options *opts,
                                         momento_result **ret)
{
    MOMENTO__SYNC(momento_dictionary_remove_field(c, cache, name, name_len, field, field_len,
                                                  opts, MOMENTO__SYNC_CB));
}

int momento_dictionary_remove_fields_sync(momento_client *c, const char *cache, const void *name,
                                          size_t name_len, const void *const *fields,
                                          const size_t *field_lens, size_t n,
                                          const momento_request_options *opts,
                                          momento_result **ret)
{
    MOMENTO__SYNC(momento_dictionary_remove_fields(c, cache, name, name_len, fields, field_lens, n,
                                                   opts, MOMENTO__SYNC_CB));
}

int momento_dictionary_length_sync(momento_client *c, const char *cache, const void *name,
                                   size_t name_len, const momento_request_options *opts,
                                   momento_result **ret)
{
    MOMENTO__SYNC(momento_dictionary_length(c, cache, name, name_len, opts, MOMENTO__SYNC_CB));
}
