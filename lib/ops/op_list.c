/* Lists: values in order under one key (Momento's List* RPCs). Each call
 * is one RPC; a slice's start 0 and end MOMENTO_END travel as unbounded, as
 * the official SDKs send them. Writes go through momento__coll_write, so
 * that they close the key's coalesced reads in flight; the reads (fetch,
 * length) serve both the client's calls and the coalescer's. */
#include "ops/collection.h"

#include "cacheclient.pb-c.h"

#include <stdlib.h>

/* Pushes and concatenations answer the list's length afterwards. */
MOMENTO__NUMBER_DECODER(list_push_front, LIST_PUSH_FRONT, CacheClient__ListPushFrontResponse,
                        int_value, list_length)
MOMENTO__NUMBER_DECODER(list_push_back, LIST_PUSH_BACK, CacheClient__ListPushBackResponse,
                        int_value, list_length)
MOMENTO__NUMBER_DECODER(list_concatenate_front, LIST_CONCATENATE_FRONT,
                        CacheClient__ListConcatenateFrontResponse, int_value, list_length)
MOMENTO__NUMBER_DECODER(list_concatenate_back, LIST_CONCATENATE_BACK,
                        CacheClient__ListConcatenateBackResponse, int_value, list_length)

/* A pop: found (the value at `end`) or missing. */
#define POP_DECODER(fn, ID, Type, PREFIX, end)                                                     \
    MOMENTO__DECODER(fn)                                                                           \
    {                                                                                              \
        MOMENTO__UNPACK_FOUND(Type, ID, list_case, PREFIX);                                        \
        r->value = momento__data(&m->found->end);                                                  \
        r->value_len = m->found->end.len;                                                          \
        r->outcome = MOMENTO_OUTCOME_HIT;                                                          \
        return MOMENTO_OK;                                                                         \
    }

POP_DECODER(list_pop_front, LIST_POP_FRONT, CacheClient__ListPopFrontResponse,
            CACHE_CLIENT____LIST_POP_FRONT_RESPONSE__LIST, front)
POP_DECODER(list_pop_back, LIST_POP_BACK, CacheClient__ListPopBackResponse,
            CACHE_CLIENT____LIST_POP_BACK_RESPONSE__LIST, back)

/* Remove and retain answer found (with the new length) or missing, but
 * their outcome is SUCCESS either way: the write took effect, or there was
 * nothing to write to. Only a reply that does not decode is an error. */
MOMENTO__DECODER(list_remove)
{
    (void)n_msgs;
    if (!momento__unpack_reply(MOMENTO__RPC_LIST_REMOVE, &msgs[0], scratch))
        return MOMENTO_ERR_BAD_RESPONSE;
    r->outcome = MOMENTO_OUTCOME_SUCCESS;
    return MOMENTO_OK;
}

MOMENTO__DECODER(list_retain)
{
    (void)n_msgs;
    if (!momento__unpack_reply(MOMENTO__RPC_LIST_RETAIN, &msgs[0], scratch))
        return MOMENTO_ERR_BAD_RESPONSE;
    r->outcome = MOMENTO_OUTCOME_SUCCESS;
    return MOMENTO_OK;
}

/* Unlike remove and retain, an erase tells a missing list apart: MISS. */
MOMENTO__FOUND_NUMBER_DECODER(list_erase, LIST_ERASE, CacheClient__ListEraseResponse, list_case,
                              CACHE_CLIENT____LIST_ERASE_RESPONSE__LIST, MOMENTO_OUTCOME_SUCCESS,
                              int_value, list_length)

MOMENTO__DECODER(list_fetch)
{
    MOMENTO__UNPACK_FOUND(CacheClient__ListFetchResponse, LIST_FETCH, list_case,
                          CACHE_CLIENT____LIST_FETCH_RESPONSE__LIST);
    return momento__decode_values(r, scratch, m->found->n_values, m->found->values);
}

MOMENTO__LENGTH_READ_DECODER(list_length, LIST_LENGTH,
                             CacheClient__ListLengthResponse, list_case,
                             CACHE_CLIENT____LIST_LENGTH_RESPONSE__LIST)

/* Push and concatenate: the four differ in their RPC, and in which end
 * the truncation cuts (always the one opposite to the write). */

int momento_list_push_front(momento_client *c, const char *cache, const void *name,
                            size_t name_len, const void *value, size_t value_len,
                            uint32_t truncate_to_size, const momento_collection_ttl *ttl,
                            const momento_request_options *opts, momento_callback cb,
                            void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blob(&sz, value, value_len));
    CacheClient__ListPushFrontRequest req = CACHE_CLIENT____LIST_PUSH_FRONT_REQUEST__INIT;
    MOMENTO__CHECK(momento__coll_ttl(c, ttl, &req.ttl_milliseconds, &req.refresh_ttl));
    req.list_name = momento__bytes(name, name_len);
    req.value = momento__bytes(value, value_len);
    req.truncate_back_to_size = truncate_to_size;
    return momento__coll_write(c, MOMENTO__RPC_LIST_PUSH_FRONT, momento__decode_list_push_front,
                               cache, name, name_len, &req.base, opts, cb, userdata);
}

int momento_list_push_back(momento_client *c, const char *cache, const void *name,
                           size_t name_len, const void *value, size_t value_len,
                           uint32_t truncate_to_size, const momento_collection_ttl *ttl,
                           const momento_request_options *opts, momento_callback cb,
                           void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blob(&sz, value, value_len));
    CacheClient__ListPushBackRequest req = CACHE_CLIENT____LIST_PUSH_BACK_REQUEST__INIT;
    MOMENTO__CHECK(momento__coll_ttl(c, ttl, &req.ttl_milliseconds, &req.refresh_ttl));
    req.list_name = momento__bytes(name, name_len);
    req.value = momento__bytes(value, value_len);
    req.truncate_front_to_size = truncate_to_size;
    return momento__coll_write(c, MOMENTO__RPC_LIST_PUSH_BACK, momento__decode_list_push_back,
                               cache, name, name_len, &req.base, opts, cb, userdata);
}

int momento_list_concatenate_front(momento_client *c, const char *cache, const void *name,
                                   size_t name_len, const void *const *values,
                                   const size_t *value_lens, size_t n, uint32_t truncate_to_size,
                                   const momento_collection_ttl *ttl,
                                   const momento_request_options *opts, momento_callback cb,
                                   void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blobs(&sz, values, value_lens, n));
    CacheClient__ListConcatenateFrontRequest req =
        CACHE_CLIENT____LIST_CONCATENATE_FRONT_REQUEST__INIT;
    MOMENTO__CHECK(momento__coll_ttl(c, ttl, &req.ttl_milliseconds, &req.refresh_ttl));
    req.list_name = momento__bytes(name, name_len);
    req.truncate_back_to_size = truncate_to_size;
    req.values = momento__blob_array(values, value_lens, n);
    if (!req.values)
        return MOMENTO_ERR_NO_MEMORY;
    req.n_values = n;
    int rc = momento__coll_write(c, MOMENTO__RPC_LIST_CONCATENATE_FRONT,
                                 momento__decode_list_concatenate_front, cache, name, name_len,
                                 &req.base, opts, cb, userdata);
    free(req.values); /* the request was packed at submit */
    return rc;
}

int momento_list_concatenate_back(momento_client *c, const char *cache, const void *name,
                                  size_t name_len, const void *const *values,
                                  const size_t *value_lens, size_t n, uint32_t truncate_to_size,
                                  const momento_collection_ttl *ttl,
                                  const momento_request_options *opts, momento_callback cb,
                                  void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blobs(&sz, values, value_lens, n));
    CacheClient__ListConcatenateBackRequest req =
        CACHE_CLIENT____LIST_CONCATENATE_BACK_REQUEST__INIT;
    MOMENTO__CHECK(momento__coll_ttl(c, ttl, &req.ttl_milliseconds, &req.refresh_ttl));
    req.list_name = momento__bytes(name, name_len);
    req.truncate_front_to_size = truncate_to_size;
    req.values = momento__blob_array(values, value_lens, n);
    if (!req.values)
        return MOMENTO_ERR_NO_MEMORY;
    req.n_values = n;
    int rc = momento__coll_write(c, MOMENTO__RPC_LIST_CONCATENATE_BACK,
                                 momento__decode_list_concatenate_back, cache, name, name_len,
                                 &req.base, opts, cb, userdata);
    free(req.values);
    return rc;
}

int momento_list_pop_front(momento_client *c, const char *cache, const void *name,
                           size_t name_len, const momento_request_options *opts,
                           momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    CacheClient__ListPopFrontRequest req = CACHE_CLIENT____LIST_POP_FRONT_REQUEST__INIT;
    req.list_name = momento__bytes(name, name_len);
    return momento__coll_write(c, MOMENTO__RPC_LIST_POP_FRONT, momento__decode_list_pop_front,
                               cache, name, name_len, &req.base, opts, cb, userdata);
}

int momento_list_pop_back(momento_client *c, const char *cache, const void *name,
                          size_t name_len, const momento_request_options *opts,
                          momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    CacheClient__ListPopBackRequest req = CACHE_CLIENT____LIST_POP_BACK_REQUEST__INIT;
    req.list_name = momento__bytes(name, name_len);
    return momento__coll_write(c, MOMENTO__RPC_LIST_POP_BACK, momento__decode_list_pop_back, cache,
                               name, name_len, &req.base, opts, cb, userdata);
}

static int fetch(momento__target t, const char *cache, const void *name, size_t name_len,
                 int32_t start, int32_t end, const momento_request_options *opts,
                 momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    MOMENTO__CHECK(momento__check_slice(start, end));
    CacheClient__ListFetchRequest req = CACHE_CLIENT____LIST_FETCH_REQUEST__INIT;
    CacheClient__Unbounded unbounded = CACHE_CLIENT____UNBOUNDED__INIT;
    req.list_name = momento__bytes(name, name_len);
    if (start == 0) {
        req.start_index_case = CACHE_CLIENT____LIST_FETCH_REQUEST__START_INDEX_UNBOUNDED_START;
        req.unbounded_start = &unbounded;
    } else {
        req.start_index_case = CACHE_CLIENT____LIST_FETCH_REQUEST__START_INDEX_INCLUSIVE_START;
        req.inclusive_start = start;
    }
    if (end == MOMENTO_END) {
        req.end_index_case = CACHE_CLIENT____LIST_FETCH_REQUEST__END_INDEX_UNBOUNDED_END;
        req.unbounded_end = &unbounded;
    } else {
        req.end_index_case = CACHE_CLIENT____LIST_FETCH_REQUEST__END_INDEX_EXCLUSIVE_END;
        req.exclusive_end = end;
    }
    return momento__coll_read(t, MOMENTO__RPC_LIST_FETCH, momento__decode_list_fetch, cache, name,
                              name_len, &req.base, opts, cb, userdata);
}

int momento_list_fetch(momento_client *c, const char *cache, const void *name, size_t name_len,
                       int32_t start, int32_t end, const momento_request_options *opts,
                       momento_callback cb, void *userdata)
{
    return fetch(momento__to_client(c), cache, name, name_len, start, end, opts, cb, userdata);
}

int momento_coalescing_list_fetch(momento_coalescer *co, const char *cache, const void *name,
                                  size_t name_len, int32_t start, int32_t end,
                                  const momento_request_options *opts, momento_callback cb,
                                  void *userdata)
{
    return fetch(momento__to_coalescer(co), cache, name, name_len, start, end, opts, cb,
                 userdata);
}

int momento_list_retain(momento_client *c, const char *cache, const void *name, size_t name_len,
                        int32_t start, int32_t end, const momento_collection_ttl *ttl,
                        const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    MOMENTO__CHECK(momento__check_slice(start, end));
    CacheClient__ListRetainRequest req = CACHE_CLIENT____LIST_RETAIN_REQUEST__INIT;
    CacheClient__Unbounded unbounded = CACHE_CLIENT____UNBOUNDED__INIT;
    MOMENTO__CHECK(momento__coll_ttl(c, ttl, &req.ttl_milliseconds, &req.refresh_ttl));
    req.list_name = momento__bytes(name, name_len);
    if (start == 0) {
        req.start_index_case = CACHE_CLIENT____LIST_RETAIN_REQUEST__START_INDEX_UNBOUNDED_START;
        req.unbounded_start = &unbounded;
    } else {
        req.start_index_case = CACHE_CLIENT____LIST_RETAIN_REQUEST__START_INDEX_INCLUSIVE_START;
        req.inclusive_start = start;
    }
    if (end == MOMENTO_END) {
        req.end_index_case = CACHE_CLIENT____LIST_RETAIN_REQUEST__END_INDEX_UNBOUNDED_END;
        req.unbounded_end = &unbounded;
    } else {
        req.end_index_case = CACHE_CLIENT____LIST_RETAIN_REQUEST__END_INDEX_EXCLUSIVE_END;
        req.exclusive_end = end;
    }
    return momento__coll_write(c, MOMENTO__RPC_LIST_RETAIN, momento__decode_list_retain, cache,
                               name, name_len, &req.base, opts, cb, userdata);
}

int momento_list_remove_value(momento_client *c, const char *cache, const void *name,
                              size_t name_len, const void *value, size_t value_len,
                              const momento_request_options *opts, momento_callback cb,
                              void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blob(&sz, value, value_len));
    CacheClient__ListRemoveRequest req;
    /* Not the INIT macro: its oneof of bytes draws -Wmissing-braces. */
    cache_client____list_remove_request__init(&req);
    req.list_name = momento__bytes(name, name_len);
    req.remove_case = CACHE_CLIENT____LIST_REMOVE_REQUEST__REMOVE_ALL_ELEMENTS_WITH_VALUE;
    req.all_elements_with_value = momento__bytes(value, value_len);
    return momento__coll_write(c, MOMENTO__RPC_LIST_REMOVE, momento__decode_list_remove, cache,
                               name, name_len, &req.base, opts, cb, userdata);
}

/* Each range travels as a _ListRange of two varints: at most 14 bytes
 * with its tag and length. */
#define RANGE_BYTES 16

int momento_list_erase(momento_client *c, const char *cache, const void *name, size_t name_len,
                       const uint32_t *begin_indexes, const uint32_t *counts, size_t n_ranges,
                       const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    /* "All" only when asked for with no arrays at all: an empty list of
     * ranges built by a caller's loop must not erase the whole list. */
    if (n_ranges == 0 ? (begin_indexes || counts) : (!begin_indexes || !counts))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, n_ranges ? "the ranges' arrays are NULL"
                                                  : "no ranges, yet arrays of them (erasing "
                                                    "all takes NULL arrays)");
    if (n_ranges > (MOMENTO__MAX_REQUEST_BYTES - name_len) / RANGE_BYTES)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "%zu ranges are more than one request can carry",
                               n_ranges);
    CacheClient__ListEraseRequest req = CACHE_CLIENT____LIST_ERASE_REQUEST__INIT;
    CacheClient__ListEraseRequest__All all = CACHE_CLIENT____LIST_ERASE_REQUEST____ALL__INIT;
    CacheClient__ListEraseRequest__ListRanges some =
        CACHE_CLIENT____LIST_ERASE_REQUEST____LIST_RANGES__INIT;
    req.list_name = momento__bytes(name, name_len);
    if (n_ranges == 0) {
        req.erase_case = CACHE_CLIENT____LIST_ERASE_REQUEST__ERASE_ALL;
        req.all = &all;
        return momento__coll_write(c, MOMENTO__RPC_LIST_ERASE, momento__decode_list_erase, cache,
                                   name, name_len, &req.base, opts, cb, userdata);
    }
    CacheClient__ListRange *ranges = momento__malloc(n_ranges * sizeof(*ranges));
    CacheClient__ListRange **ptrs = momento__malloc(n_ranges * sizeof(*ptrs));
    int rc = MOMENTO_ERR_NO_MEMORY;
    if (ranges && ptrs) {
        for (size_t i = 0; i < n_ranges; i++) {
            cache_client____list_range__init(&ranges[i]);
            ranges[i].begin_index = begin_indexes[i];
            ranges[i].count = counts[i];
            ptrs[i] = &ranges[i];
        }
        some.n_ranges = n_ranges;
        some.ranges = ptrs;
        req.erase_case = CACHE_CLIENT____LIST_ERASE_REQUEST__ERASE_SOME;
        req.some = &some;
        rc = momento__coll_write(c, MOMENTO__RPC_LIST_ERASE, momento__decode_list_erase, cache,
                                 name, name_len, &req.base, opts, cb, userdata);
    }
    free(ranges); /* the request was packed at submit */
    free(ptrs);
    return rc;
}

static int length(momento__target t, const char *cache, const void *name, size_t name_len,
                  const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    CacheClient__ListLengthRequest req = CACHE_CLIENT____LIST_LENGTH_REQUEST__INIT;
    req.list_name = momento__bytes(name, name_len);
    return momento__coll_read(t, MOMENTO__RPC_LIST_LENGTH, momento__decode_list_length, cache, name,
                              name_len, &req.base, opts, cb, userdata);
}

int momento_list_length(momento_client *c, const char *cache, const void *name, size_t name_len,
                        const momento_request_options *opts, momento_callback cb, void *userdata)
{
    return length(momento__to_client(c), cache, name, name_len, opts, cb, userdata);
}

int momento_coalescing_list_length(momento_coalescer *co, const char *cache, const void *name,
                                   size_t name_len, const momento_request_options *opts,
                                   momento_callback cb, void *userdata)
{
    return length(momento__to_coalescer(co), cache, name, name_len, opts, cb, userdata);
}

/* Blocking forms. */

int momento_list_push_front_sync(momento_client *c, const char *cache, const void *name,
                                 size_t name_len, const void *value, size_t value_len,
                                 uint32_t truncate_to_size, const momento_collection_ttl *ttl,
                                 const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_list_push_front(c, cache, name, name_len, value, value_len,
                                          truncate_to_size, ttl, opts, MOMENTO__SYNC_CB));
}

int momento_list_push_back_sync(momento_client *c, const char *cache, const void *name,
                                size_t name_len, const void *value, size_t value_len,
                                uint32_t truncate_to_size, const momento_collection_ttl *ttl,
                                const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_list_push_back(c, cache, name, name_len, value, value_len,
                                         truncate_to_size, ttl, opts, MOMENTO__SYNC_CB));
}

int momento_list_concatenate_front_sync(momento_client *c, const char *cache, const void *name,
                                        size_t name_len, const void *const *values,
                                        const size_t *value_lens, size_t n,
                                        uint32_t truncate_to_size,
                                        const momento_collection_ttl *ttl,
                                        const momento_request_options *opts,
                                        momento_result **ret)
{
    MOMENTO__SYNC(momento_list_concatenate_front(c, cache, name, name_len, values, value_lens, n,
                                                 truncate_to_size, ttl, opts, MOMENTO__SYNC_CB));
}

int momento_list_concatenate_back_sync(momento_client *c, const char *cache, const void *name,
                                       size_t name_len, const void *const *values,
                                       const size_t *value_lens, size_t n,
                                       uint32_t truncate_to_size,
                                       const momento_collection_ttl *ttl,
                                       const momento_request_options *opts,
                                       momento_result **ret)
{
    MOMENTO__SYNC(momento_list_concatenate_back(c, cache, name, name_len, values, value_lens, n,
                                                truncate_to_size, ttl, opts, MOMENTO__SYNC_CB));
}

int momento_list_pop_front_sync(momento_client *c, const char *cache, const void *name,
                                size_t name_len, const momento_request_options *opts,
                                momento_result **ret)
{
    MOMENTO__SYNC(momento_list_pop_front(c, cache, name, name_len, opts, MOMENTO__SYNC_CB));
}

int momento_list_pop_back_sync(momento_client *c, const char *cache, const void *name,
                               size_t name_len, const momento_request_options *opts,
                               momento_result **ret)
{
    MOMENTO__SYNC(momento_list_pop_back(c, cache, name, name_len, opts, MOMENTO__SYNC_CB));
}

int momento_list_fetch_sync(momento_client *c, const char *cache, const void *name,
                            size_t name_len, int32_t start, int32_t end,
                            const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(
        momento_list_fetch(c, cache, name, name_len, start, end, opts, MOMENTO__SYNC_CB));
}

int momento_list_retain_sync(momento_client *c, const char *cache, const void *name,
                             size_t name_len, int32_t start, int32_t end,
                             const momento_collection_ttl *ttl,
                             const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(
        momento_list_retain(c, cache, name, name_len, start, end, ttl, opts, MOMENTO__SYNC_CB));
}

int momento_list_remove_value_sync(momento_client *c, const char *cache, const void *name,
                                   size_t name_len, const void *value, size_t value_len,
                                   const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_list_remove_value(c, cache, name, name_len, value, value_len, opts,
                                            MOMENTO__SYNC_CB));
}

int momento_list_erase_sync(momento_client *c, const char *cache, const void *name,
                            size_t name_len, const uint32_t *begin_indexes, const uint32_t *counts,
                            size_t n_ranges, const momento_request_options *opts,
                            momento_result **ret)
{
    MOMENTO__SYNC(momento_list_erase(c, cache, name, name_len, begin_indexes, counts, n_ranges,
                                     opts, MOMENTO__SYNC_CB));
}

int momento_list_length_sync(momento_client *c, const char *cache, const void *name,
                             size_t name_len, const momento_request_options *opts,
                             momento_result **ret)
{
    MOMENTO__SYNC(momento_list_length(c, cache, name, name_len, opts, MOMENTO__SYNC_CB));
}
