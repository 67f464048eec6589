/* Sets: distinct elements under one key (Momento's Set* RPCs). Adding is
 * SetUnion, removing SetDifference's subtrahend; the one-element calls are
 * the many-element ones with n = 1. */
#include "ops/collection.h"

#include "cacheclient.pb-c.h"

#include <stdlib.h>

/* One decoder per RPC over one shape: found (elements) or missing. */
#define ELEMENTS_DECODER(fn, ID, Type, PREFIX)                                                     \
    MOMENTO__DECODER(fn)                                                                           \
    {                                                                                              \
        MOMENTO__UNPACK_FOUND(Type, ID, set_case, PREFIX);                                         \
        return momento__decode_values(r, scratch, m->found->n_elements, m->found->elements);       \
    }

ELEMENTS_DECODER(set_fetch, SET_FETCH, CacheClient__SetFetchResponse,
                 CACHE_CLIENT____SET_FETCH_RESPONSE__SET)
ELEMENTS_DECODER(set_sample, SET_SAMPLE, CacheClient__SetSampleResponse,
                 CACHE_CLIENT____SET_SAMPLE_RESPONSE__SET)
ELEMENTS_DECODER(set_pop, SET_POP, CacheClient__SetPopResponse,
                 CACHE_CLIENT____SET_POP_RESPONSE__SET)

MOMENTO__EMPTY_DECODER(set_union, MOMENTO_OUTCOME_SUCCESS)

MOMENTO__DECODER(set_difference)
{
    MOMENTO__UNPACK_ONE(CacheClient__SetDifferenceResponse, SET_DIFFERENCE);
    if (m->set_case == CACHE_CLIENT____SET_DIFFERENCE_RESPONSE__SET__NOT_SET)
        return MOMENTO_ERR_BAD_RESPONSE;
    /* Removing from a missing set succeeds, as the official SDKs report. */
    r->outcome = MOMENTO_OUTCOME_SUCCESS;
    return MOMENTO_OK;
}

MOMENTO__DECODER(set_contains)
{
    MOMENTO__UNPACK_FOUND(CacheClient__SetContainsResponse, SET_CONTAINS, set_case,
                          CACHE_CLIENT____SET_CONTAINS_RESPONSE__SET);
    size_t n = m->found->n_contains;
    uint8_t *exists = momento__malloc(n + 1);
    if (!exists)
        return MOMENTO_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++)
        exists[i] = m->found->contains[i] ? 1 : 0;
    scratch->mem = exists;
    r->exists = exists;
    r->n_exists = n;
    r->outcome = MOMENTO_OUTCOME_HIT;
    return MOMENTO_OK;
}

MOMENTO__LENGTH_READ_DECODER(set_length, SET_LENGTH,
                             CacheClient__SetLengthResponse, set_case,
                             CACHE_CLIENT____SET_LENGTH_RESPONSE__SET)

int momento_set_add_elements(momento_client *c, const char *cache, const void *name,
                             size_t name_len, const void *const *elements,
                             const size_t *element_lens, size_t n,
                             const momento_collection_ttl *ttl, const momento_request_options *opts,
                             momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blobs(&sz, elements, element_lens, n));
    CacheClient__SetUnionRequest req = CACHE_CLIENT____SET_UNION_REQUEST__INIT;
    MOMENTO__CHECK(momento__coll_ttl(c, ttl, &req.ttl_milliseconds, &req.refresh_ttl));
    req.set_name = momento__bytes(name, name_len);
    req.elements = momento__blob_array(elements, element_lens, n);
    if (!req.elements)
        return MOMENTO_ERR_NO_MEMORY;
    req.n_elements = n;
    int rc = momento__coll_write(c, MOMENTO__RPC_SET_UNION, momento__decode_set_union, cache, name,
                                 name_len, &req.base, opts, cb, userdata);
    free(req.elements);
    return rc;
}

int momento_set_add_element(momento_client *c, const char *cache, const void *name,
                            size_t name_len, const void *element, size_t element_len,
                            const momento_collection_ttl *ttl, const momento_request_options *opts,
                            momento_callback cb, void *userdata)
{
    return momento_set_add_elements(c, cache, name, name_len, &element, &element_len, 1, ttl, opts,
                                    cb, userdata);
}

int momento_set_remove_elements(momento_client *c, const char *cache, const void *name,
                                size_t name_len, const void *const *elements,
                                const size_t *element_lens, size_t n,
                                const momento_request_options *opts, momento_callback cb,
                                void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blobs(&sz, elements, element_lens, n));
    CacheClient__SetDifferenceRequest req = CACHE_CLIENT____SET_DIFFERENCE_REQUEST__INIT;
    CacheClient__SetDifferenceRequest__Subtrahend sub =
        CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND__INIT;
    CacheClient__SetDifferenceRequest__Subtrahend__Set set =
        CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND____SET__INIT;
    set.elements = momento__blob_array(elements, element_lens, n);
    if (!set.elements)
        return MOMENTO_ERR_NO_MEMORY;
    set.n_elements = n;
    sub.subtrahend_set_case =
        CACHE_CLIENT____SET_DIFFERENCE_REQUEST____SUBTRAHEND__SUBTRAHEND_SET_SET;
    sub.set = &set;
    req.set_name = momento__bytes(name, name_len);
    req.difference_case = CACHE_CLIENT____SET_DIFFERENCE_REQUEST__DIFFERENCE_SUBTRAHEND;
    req.subtrahend = &sub;
    int rc = momento__coll_write(c, MOMENTO__RPC_SET_DIFFERENCE, momento__decode_set_difference,
                                 cache, name, name_len, &req.base, opts, cb, userdata);
    free(set.elements);
    return rc;
}

int momento_set_remove_element(momento_client *c, const char *cache, const void *name,
                               size_t name_len, const void *element, size_t element_len,
                               const momento_request_options *opts, momento_callback cb,
                               void *userdata)
{
    return momento_set_remove_elements(c, cache, name, name_len, &element, &element_len, 1, opts,
                                       cb, userdata);
}

static int fetch(momento__target t, const char *cache, const void *name, size_t name_len,
                 const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    CacheClient__SetFetchRequest req = CACHE_CLIENT____SET_FETCH_REQUEST__INIT;
    req.set_name = momento__bytes(name, name_len);
    return momento__coll_read(t, MOMENTO__RPC_SET_FETCH, momento__decode_set_fetch, cache, name,
                              name_len, &req.base, opts, cb, userdata);
}

int momento_set_fetch(momento_client *c, const char *cache, const void *name, size_t name_len,
                      const momento_request_options *opts, momento_callback cb, void *userdata)
{
    return fetch(momento__to_client(c), cache, name, name_len, opts, cb, userdata);
}

int momento_coalescing_set_fetch(momento_coalescer *co, const char *cache, const void *name,
                                 size_t name_len, const momento_request_options *opts,
                                 momento_callback cb, void *userdata)
{
    return fetch(momento__to_coalescer(co), cache, name, name_len, opts, cb, userdata);
}

int momento_set_sample(momento_client *c, const char *cache, const void *name, size_t name_len,
                       uint64_t limit, const momento_request_options *opts, momento_callback cb,
                       void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    CacheClient__SetSampleRequest req = CACHE_CLIENT____SET_SAMPLE_REQUEST__INIT;
    req.set_name = momento__bytes(name, name_len);
    req.limit = limit;
    return momento__call_start(c, MOMENTO__RPC_SET_SAMPLE, momento__decode_set_sample, cache,
                               &req.base, opts, cb, userdata);
}

int momento_set_pop(momento_client *c, const char *cache, const void *name, size_t name_len,
                    uint32_t count, const momento_request_options *opts, momento_callback cb,
                    void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    if (count == 0) /* as the official SDKs: a pop takes at least one */
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "a pop of 0 elements");
    CacheClient__SetPopRequest req = CACHE_CLIENT____SET_POP_REQUEST__INIT;
    req.set_name = momento__bytes(name, name_len);
    req.count = count;
    return momento__coll_write(c, MOMENTO__RPC_SET_POP, momento__decode_set_pop, cache, name,
                               name_len, &req.base, opts, cb, userdata);
}

static int contains(momento__target t, const char *cache, const void *name, size_t name_len,
                    const void *const *elements, const size_t *element_lens, size_t n,
                    const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blobs(&sz, elements, element_lens, n));
    CacheClient__SetContainsRequest req = CACHE_CLIENT____SET_CONTAINS_REQUEST__INIT;
    req.set_name = momento__bytes(name, name_len);
    req.elements = momento__blob_array(elements, element_lens, n);
    if (!req.elements)
        return MOMENTO_ERR_NO_MEMORY;
    req.n_elements = n;
    int rc = momento__coll_read(t, MOMENTO__RPC_SET_CONTAINS, momento__decode_set_contains, cache,
                                name, name_len, &req.base, opts, cb, userdata);
    free(req.elements);
    return rc;
}

int momento_set_contains_elements(momento_client *c, const char *cache, const void *name,
                                  size_t name_len, const void *const *elements,
                                  const size_t *element_lens, size_t n,
                                  const momento_request_options *opts, momento_callback cb,
                                  void *userdata)
{
    return contains(momento__to_client(c), cache, name, name_len, elements, element_lens, n, opts,
                    cb, userdata);
}

int momento_coalescing_set_contains_elements(momento_coalescer *co, const char *cache,
                                             const void *name, size_t name_len,
                                             const void *const *elements,
                                             const size_t *element_lens, size_t n,
                                             const momento_request_options *opts,
                                             momento_callback cb, void *userdata)
{
    return contains(momento__to_coalescer(co), cache, name, name_len, elements, element_lens, n,
                    opts, cb, userdata);
}

static int length(momento__target t, const char *cache, const void *name, size_t name_len,
                  const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    CacheClient__SetLengthRequest req = CACHE_CLIENT____SET_LENGTH_REQUEST__INIT;
    req.set_name = momento__bytes(name, name_len);
    return momento__coll_read(t, MOMENTO__RPC_SET_LENGTH, momento__decode_set_length, cache, name,
                              name_len, &req.base, opts, cb, userdata);
}

int momento_set_length(momento_client *c, const char *cache, const void *name, size_t name_len,
                       const momento_request_options *opts, momento_callback cb, void *userdata)
{
    return length(momento__to_client(c), cache, name, name_len, opts, cb, userdata);
}

int momento_coalescing_set_length(momento_coalescer *co, const char *cache, const void *name,
                                  size_t name_len, const momento_request_options *opts,
                                  momento_callback cb, void *userdata)
{
    return length(momento__to_coalescer(co), cache, name, name_len, opts, cb, userdata);
}

/* Blocking forms. */

int momento_set_add_element_sync(momento_client *c, const char *cache, const void *name,
                                 size_t name_len, const void *element, size_t element_len,
                                 const momento_collection_ttl *ttl,
                                 const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_set_add_element(c, cache, name, name_len, element, element_len, ttl,
                                          opts, MOMENTO__SYNC_CB));
}

int momento_set_add_elements_sync(momento_client *c, const char *cache, const void *name,
                                  size_t name_len, const void *const *elements,
                                  const size_t *element_lens, size_t n,
                                  const momento_collection_ttl *ttl,
                                  const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_set_add_elements(c, cache, name, name_len, elements, element_lens, n,
                                           ttl, opts, MOMENTO__SYNC_CB));
}

int momento_set_remove_element_sync(momento_client *c, const char *cache, const void *name,
                                    size_t name_len, const void *element, size_t element_len,
                                    const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_set_remove_element(c, cache, name, name_len, element, element_len, opts,
                                             MOMENTO__SYNC_CB));
}

int momento_set_remove_elements_sync(momento_client *c, const char *cache, const void *name,
                                     size_t name_len, const void *const *elements,
                                     const size_t *element_lens, size_t n,
                                     const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_set_remove_elements(c, cache, name, name_len, elements, element_lens, n,
                                              opts, MOMENTO__SYNC_CB));
}

int momento_set_fetch_sync(momento_client *c, const char *cache, const void *name,
                           size_t name_len, const momento_request_options *opts,
                           momento_result **ret)
{
    MOMENTO__SYNC(momento_set_fetch(c, cache, name, name_len, opts, MOMENTO__SYNC_CB));
}

int momento_set_sample_sync(momento_client *c, const char *cache, const void *name,
                            size_t name_len, uint64_t limit, const momento_request_options *opts,
                            momento_result **ret)
{
    MOMENTO__SYNC(momento_set_sample(c, cache, name, name_len, limit, opts, MOMENTO__SYNC_CB));
}

int momento_set_pop_sync(momento_client *c, const char *cache, const void *name, size_t name_len,
                         uint32_t count, const momento_request_options *opts,
                         momento_result **ret)
{
    MOMENTO__SYNC(momento_set_pop(c, cache, name, name_len, count, opts, MOMENTO__SYNC_CB));
}

int momento_set_contains_elements_sync(momento_client *c, const char *cache, const void *name,
                                       size_t name_len, const void *const *elements,
                                       const size_t *element_lens, size_t n,
                                       const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_set_contains_elements(c, cache, name, name_len, elements, element_lens,
                                                n, opts, MOMENTO__SYNC_CB));
}

int momento_set_length_sync(momento_client *c, const char *cache, const void *name,
                            size_t name_len, const momento_request_options *opts,
                            momento_result **ret)
{
    MOMENTO__SYNC(momento_set_length(c, cache, name, name_len, opts, MOMENTO__SYNC_CB));
}
