/* Sorted sets: values with scores under one key (Momento's SortedSet*
 * RPCs). The one-element calls are the many-element ones with n = 1, as the
 * official SDKs send them; fetches always ask for the scores. Score bounds
 * of -INFINITY / INFINITY travel as unbounded, rank slices as list slices
 * (collection.h). Writes go through momento__coll_write, so that they close
 * the key's coalesced reads in flight; each read serves both the client's
 * call and the coalescer's. SortedSetUnionStore has no call here: the
 * public API has none. */
#include "ops/collection.h"

#include "cacheclient.pb-c.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

MOMENTO__EMPTY_DECODER(sorted_set_put, MOMENTO_OUTCOME_SUCCESS)

MOMENTO__EMPTY_DECODER(sorted_set_remove, MOMENTO_OUTCOME_SUCCESS)

MOMENTO__DECODER(sorted_set_fetch)
{
    MOMENTO__UNPACK_FOUND(CacheClient__SortedSetFetchResponse, SORTED_SET_FETCH, sorted_set_case,
                          CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE__SORTED_SET);
    /* The request asked for scores: a reply of bare values cannot be
     * answered as the header promises. No elements at all (a range that
     * matched nothing) may come as an unset oneof. */
    size_t n = 0;
    CacheClient__SortedSetElement **elements = NULL;
    switch (m->found->elements_case) {
    case CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE____FOUND__ELEMENTS_VALUES_WITH_SCORES:
        if (!m->found->values_with_scores)
            return MOMENTO_ERR_BAD_RESPONSE;
        n = m->found->values_with_scores->n_elements;
        elements = m->found->values_with_scores->elements;
        break;
    case CACHE_CLIENT____SORTED_SET_FETCH_RESPONSE____FOUND__ELEMENTS__NOT_SET:
        break;
    default:
        return MOMENTO_ERR_BAD_RESPONSE;
    }
    momento_result *items = momento__items_new(scratch, n, MOMENTO_OUTCOME_HIT);
    if (!items)
        return MOMENTO_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) {
        items[i].value = momento__data(&elements[i]->value);
        items[i].value_len = elements[i]->value.len;
        items[i].score = elements[i]->score;
    }
    r->items = items;
    r->n_items = n;
    r->outcome = MOMENTO_OUTCOME_HIT;
    return MOMENTO_OK;
}

MOMENTO__DECODER(sorted_set_get_score)
{
    MOMENTO__UNPACK_FOUND(CacheClient__SortedSetGetScoreResponse, SORTED_SET_GET_SCORE,
                          sorted_set_case, CACHE_CLIENT____SORTED_SET_GET_SCORE_RESPONSE__SORTED_SET);
    size_t n = m->found->n_elements;
    momento_result *items = momento__items_new(scratch, n, MOMENTO_OUTCOME_MISS);
    if (!items)
        return MOMENTO_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) {
        const CacheClient__SortedSetGetScoreResponse__SortedSetGetScoreResponsePart *p =
            m->found->elements[i];
        if (p->result == CACHE_CLIENT__ECACHE_RESULT__Hit) {
            items[i].outcome = MOMENTO_OUTCOME_HIT;
            items[i].score = p->score;
        } else if (p->result != CACHE_CLIENT__ECACHE_RESULT__Miss) {
            return MOMENTO_ERR_BAD_RESPONSE;
        }
    }
    r->items = items;
    r->n_items = n;
    r->outcome = MOMENTO_OUTCOME_HIT;
    return MOMENTO_OK;
}

MOMENTO__NUMBER_DECODER(sorted_set_increment, SORTED_SET_INCREMENT,
                        CacheClient__SortedSetIncrementResponse, score, score)

MOMENTO__DECODER(sorted_set_get_rank)
{
    MOMENTO__UNPACK_ONE(CacheClient__SortedSetGetRankResponse, SORTED_SET_GET_RANK);
    int rc = momento__found_or_miss(r, m->rank_case,
                                    CACHE_CLIENT____SORTED_SET_GET_RANK_RESPONSE__RANK_ELEMENT_RANK,
                                    CACHE_CLIENT____SORTED_SET_GET_RANK_RESPONSE__RANK_MISSING,
                                    m->element_rank);
    if (rc != MOMENTO__FOUND)
        return rc;
    /* The set exists; the element's own hit or miss is the outcome. */
    if (m->element_rank->result == CACHE_CLIENT__ECACHE_RESULT__Hit) {
        if (m->element_rank->rank > INT64_MAX)
            return MOMENTO_ERR_BAD_RESPONSE;
        r->int_value = (int64_t)m->element_rank->rank;
        r->outcome = MOMENTO_OUTCOME_HIT;
    } else if (m->element_rank->result == CACHE_CLIENT__ECACHE_RESULT__Miss) {
        r->outcome = MOMENTO_OUTCOME_MISS;
    } else {
        return MOMENTO_ERR_BAD_RESPONSE;
    }
    return MOMENTO_OK;
}

MOMENTO__LENGTH_READ_DECODER(sorted_set_length, SORTED_SET_LENGTH,
                             CacheClient__SortedSetLengthResponse, sorted_set_case,
                             CACHE_CLIENT____SORTED_SET_LENGTH_RESPONSE__SORTED_SET)

MOMENTO__NUMBER_DECODER(sorted_set_union_store, SORTED_SET_UNION_STORE,
                        CacheClient__SortedSetUnionStoreResponse, int_value, length)

/* A count of the set's elements by score reads as the set's length does. */
MOMENTO__LENGTH_READ_DECODER(sorted_set_length_by_score, SORTED_SET_LENGTH_BY_SCORE,
                             CacheClient__SortedSetLengthByScoreResponse, sorted_set_case,
                             CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_RESPONSE__SORTED_SET)

/* Argument checks shared by the calls below: each returns 0 or
 * MOMENTO_ERR_INVALID_ARGUMENT. */

static int check_order(momento_order order)
{
    return order == MOMENTO_ASCENDING || order == MOMENTO_DESCENDING
               ? MOMENTO_OK
               : momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "unknown order %d", (int)order);
}

static CacheClient__SortedSetFetchRequest__Order fetch_order(momento_order order)
{
    return order == MOMENTO_DESCENDING ? CACHE_CLIENT____SORTED_SET_FETCH_REQUEST__ORDER__DESCENDING
                                       : CACHE_CLIENT____SORTED_SET_FETCH_REQUEST__ORDER__ASCENDING;
}

/* Score bounds: no NaN, min <= max (infinities allowed, as "no bound"). */
/* The range a [min, max] pair means: inclusive ends, an infinite one open. */
static momento_score_range inclusive_range(double min, double max)
{
    momento_score_range r = {.min = {min, MOMENTO_INCLUSIVE}, .max = {max, MOMENTO_INCLUSIVE}};
    return r;
}

/* Whether the bound is sent: an inclusive bound at the infinity on its own
 * side admits every score, so [-INFINITY, INFINITY] goes as the open range
 * (as the [min, max] forms always sent it). An exclusive one does not: it
 * leaves out the scores at that infinity. */
static bool bounded(const momento_score_bound *b, double open_end)
{
    return b->kind == MOMENTO_EXCLUSIVE || (b->kind == MOMENTO_INCLUSIVE && b->score != open_end);
}

static int check_score_range(const momento_score_range *r)
{
    const momento_score_bound *lo = &r->min, *hi = &r->max;
    if ((unsigned)lo->kind > MOMENTO_EXCLUSIVE || (unsigned)hi->kind > MOMENTO_EXCLUSIVE)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "a score bound's kind is not a momento_bound_kind");
    if ((lo->kind != MOMENTO_UNBOUNDED && isnan(lo->score)) ||
        (hi->kind != MOMENTO_UNBOUNDED && isnan(hi->score)))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "a score bound is NaN");
    /* An open end cannot reverse a range; -INFINITY as a maximum can (as
     * INFINITY as a minimum), as the [min, max] forms always refused. */
    if (lo->kind != MOMENTO_UNBOUNDED && hi->kind != MOMENTO_UNBOUNDED && lo->score > hi->score)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "the score range is reversed (min %g > max %g)", lo->score,
                               hi->score);
    return MOMENTO_OK;
}

int momento_sorted_set_put_elements(momento_client *c, const char *cache, const void *name,
                                    size_t name_len, const void *const *values,
                                    const size_t *value_lens, const double *scores, size_t n,
                                    const momento_collection_ttl *ttl,
                                    const momento_request_options *opts, momento_callback cb,
                                    void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blobs(&sz, values, value_lens, n));
    if (!scores)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the array of scores is NULL");
    for (size_t i = 0; i < n; i++)
        if (isnan(scores[i]))
            return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the score at index %zu of the array is NaN", i);
    CacheClient__SortedSetPutRequest req = CACHE_CLIENT____SORTED_SET_PUT_REQUEST__INIT;
    MOMENTO__CHECK(momento__coll_ttl(c, ttl, &req.ttl_milliseconds, &req.refresh_ttl));
    req.set_name = momento__bytes(name, name_len);
    CacheClient__SortedSetElement *elements = momento__malloc(n * sizeof(*elements));
    CacheClient__SortedSetElement **ptrs = momento__malloc(n * sizeof(*ptrs));
    int rc = MOMENTO_ERR_NO_MEMORY;
    if (elements && ptrs) {
        for (size_t i = 0; i < n; i++) {
            cache_client____sorted_set_element__init(&elements[i]);
            elements[i].value = momento__bytes(values[i], value_lens[i]);
            elements[i].score = scores[i];
            ptrs[i] = &elements[i];
        }
        req.n_elements = n;
        req.elements = ptrs;
        rc = momento__coll_write(c, MOMENTO__RPC_SORTED_SET_PUT, momento__decode_sorted_set_put,
                                 cache, name, name_len, &req.base, opts, cb, userdata);
    }
    free(elements); /* the request was packed at submit */
    free(ptrs);
    return rc;
}

int momento_sorted_set_put_element(momento_client *c, const char *cache, const void *name,
                                   size_t name_len, const void *value, size_t value_len,
                                   double score, const momento_collection_ttl *ttl,
                                   const momento_request_options *opts, momento_callback cb,
                                   void *userdata)
{
    return momento_sorted_set_put_elements(c, cache, name, name_len, &value, &value_len, &score,
                                           1, ttl, opts, cb, userdata);
}

static int fetch_by_rank(momento__target t, const char *cache, const void *name,
                         size_t name_len, int32_t start, int32_t end, momento_order order,
                         const momento_request_options *opts, momento_callback cb,
                         void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    MOMENTO__CHECK(check_order(order));
    MOMENTO__CHECK(momento__check_slice(start, end));
    CacheClient__SortedSetFetchRequest req = CACHE_CLIENT____SORTED_SET_FETCH_REQUEST__INIT;
    CacheClient__SortedSetFetchRequest__ByIndex by_index =
        CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_INDEX__INIT;
    CacheClient__Unbounded unbounded = CACHE_CLIENT____UNBOUNDED__INIT;
    if (start == 0) {
        by_index.start_case =
            CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_INDEX__START_UNBOUNDED_START;
        by_index.unbounded_start = &unbounded;
    } else {
        by_index.start_case =
            CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_INDEX__START_INCLUSIVE_START_INDEX;
        by_index.inclusive_start_index = start;
    }
    if (end == MOMENTO_END) {
        by_index.end_case = CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_INDEX__END_UNBOUNDED_END;
        by_index.unbounded_end = &unbounded;
    } else {
        by_index.end_case =
            CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_INDEX__END_EXCLUSIVE_END_INDEX;
        by_index.exclusive_end_index = end;
    }
    req.set_name = momento__bytes(name, name_len);
    req.order = fetch_order(order);
    req.with_scores = 1;
    req.range_case = CACHE_CLIENT____SORTED_SET_FETCH_REQUEST__RANGE_BY_INDEX;
    req.by_index = &by_index;
    return momento__coll_read(t, MOMENTO__RPC_SORTED_SET_FETCH, momento__decode_sorted_set_fetch,
                              cache, name, name_len, &req.base, opts, cb, userdata);
}

int momento_sorted_set_fetch_by_rank(momento_client *c, const char *cache, const void *name,
                                     size_t name_len, int32_t start, int32_t end,
                                     momento_order order, const momento_request_options *opts,
                                     momento_callback cb, void *userdata)
{
    return fetch_by_rank(momento__to_client(c), cache, name, name_len, start, end, order, opts, cb,
                         userdata);
}

int momento_coalescing_sorted_set_fetch_by_rank(momento_coalescer *co, const char *cache,
                                                const void *name, size_t name_len, int32_t start,
                                                int32_t end, momento_order order,
                                                const momento_request_options *opts,
                                                momento_callback cb, void *userdata)
{
    return fetch_by_rank(momento__to_coalescer(co), cache, name, name_len, start, end, order, opts,
                         cb, userdata);
}

static int fetch_by_score(momento__target t, const char *cache, const void *name,
                          size_t name_len, const momento_score_range *range, momento_order order,
                          uint32_t offset, uint32_t count, const momento_request_options *opts,
                          momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    MOMENTO__CHECK(check_order(order));
    static const momento_score_range everything;
    if (!range)
        range = &everything;
    MOMENTO__CHECK(check_score_range(range));
    CacheClient__SortedSetFetchRequest req = CACHE_CLIENT____SORTED_SET_FETCH_REQUEST__INIT;
    CacheClient__SortedSetFetchRequest__ByScore by_score =
        CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_SCORE__INIT;
    CacheClient__SortedSetFetchRequest__ByScore__Score min_score =
        CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_SCORE____SCORE__INIT;
    CacheClient__SortedSetFetchRequest__ByScore__Score max_score =
        CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_SCORE____SCORE__INIT;
    CacheClient__Unbounded unbounded = CACHE_CLIENT____UNBOUNDED__INIT;
    if (!bounded(&range->min, -INFINITY)) {
        by_score.min_case = CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_SCORE__MIN_UNBOUNDED_MIN;
        by_score.unbounded_min = &unbounded;
    } else {
        by_score.min_case = CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_SCORE__MIN_MIN_SCORE;
        min_score.score = range->min.score;
        min_score.exclusive = range->min.kind == MOMENTO_EXCLUSIVE;
        by_score.min_score = &min_score;
    }
    if (!bounded(&range->max, INFINITY)) {
        by_score.max_case = CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_SCORE__MAX_UNBOUNDED_MAX;
        by_score.unbounded_max = &unbounded;
    } else {
        by_score.max_case = CACHE_CLIENT____SORTED_SET_FETCH_REQUEST____BY_SCORE__MAX_MAX_SCORE;
        max_score.score = range->max.score;
        max_score.exclusive = range->max.kind == MOMENTO_EXCLUSIVE;
        by_score.max_score = &max_score;
    }
    by_score.offset = offset;
    /* The wire's count is signed, a negative one meaning "all": count 0
     * (all) and counts beyond its range, which no set can exceed anyway. */
    by_score.count = count == 0 || count > INT32_MAX ? -1 : (int32_t)count;
    req.set_name = momento__bytes(name, name_len);
    req.order = fetch_order(order);
    req.with_scores = 1;
    req.range_case = CACHE_CLIENT____SORTED_SET_FETCH_REQUEST__RANGE_BY_SCORE;
    req.by_score = &by_score;
    return momento__coll_read(t, MOMENTO__RPC_SORTED_SET_FETCH, momento__decode_sorted_set_fetch,
                              cache, name, name_len, &req.base, opts, cb, userdata);
}

int momento_sorted_set_fetch_by_score(momento_client *c, const char *cache, const void *name,
                                      size_t name_len, double min, double max,
                                      momento_order order, uint32_t offset, uint32_t count,
                                      const momento_request_options *opts, momento_callback cb,
                                      void *userdata)
{
    momento_score_range range = inclusive_range(min, max);
    return fetch_by_score(momento__to_client(c), cache, name, name_len, &range, order, offset,
                          count, opts, cb, userdata);
}

int momento_sorted_set_fetch_by_score_range(momento_client *c, const char *cache,
                                            const void *name, size_t name_len,
                                            const momento_score_range *range,
                                            momento_order order, uint32_t offset, uint32_t count,
                                            const momento_request_options *opts,
                                            momento_callback cb, void *userdata)
{
    return fetch_by_score(momento__to_client(c), cache, name, name_len, range, order, offset,
                          count, opts, cb, userdata);
}

int momento_coalescing_sorted_set_fetch_by_score(momento_coalescer *co, const char *cache,
                                                 const void *name, size_t name_len, double min,
                                                 double max, momento_order order, uint32_t offset,
                                                 uint32_t count,
                                                 const momento_request_options *opts,
                                                 momento_callback cb, void *userdata)
{
    momento_score_range range = inclusive_range(min, max);
    return fetch_by_score(momento__to_coalescer(co), cache, name, name_len, &range, order,
                          offset, count, opts, cb, userdata);
}

int momento_coalescing_sorted_set_fetch_by_score_range(
    momento_coalescer *co, const char *cache, const void *name, size_t name_len,
    const momento_score_range *range, momento_order order, uint32_t offset, uint32_t count,
    const momento_request_options *opts, momento_callback cb, void *userdata)
{
    return fetch_by_score(momento__to_coalescer(co), cache, name, name_len, range, order, offset,
                          count, opts, cb, userdata);
}

static int get_scores(momento__target t, const char *cache, const void *name, size_t name_len,
                      const void *const *values, const size_t *value_lens, size_t n,
                      const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blobs(&sz, values, value_lens, n));
    CacheClient__SortedSetGetScoreRequest req = CACHE_CLIENT____SORTED_SET_GET_SCORE_REQUEST__INIT;
    req.set_name = momento__bytes(name, name_len);
    req.values = momento__blob_array(values, value_lens, n);
    if (!req.values)
        return MOMENTO_ERR_NO_MEMORY;
    req.n_values = n;
    int rc = momento__coll_read(t, MOMENTO__RPC_SORTED_SET_GET_SCORE,
                                momento__decode_sorted_set_get_score, cache, name, name_len,
                                &req.base, opts, cb, userdata);
    free(req.values);
    return rc;
}

int momento_sorted_set_get_scores(momento_client *c, const char *cache, const void *name,
                                  size_t name_len, const void *const *values,
                                  const size_t *value_lens, size_t n,
                                  const momento_request_options *opts, momento_callback cb,
                                  void *userdata)
{
    return get_scores(momento__to_client(c), cache, name, name_len, values, value_lens, n, opts,
                      cb, userdata);
}

int momento_coalescing_sorted_set_get_scores(momento_coalescer *co, const char *cache,
                                             const void *name, size_t name_len,
                                             const void *const *values, const size_t *value_lens,
                                             size_t n, const momento_request_options *opts,
                                             momento_callback cb, void *userdata)
{
    return get_scores(momento__to_coalescer(co), cache, name, name_len, values, value_lens, n,
                      opts, cb, userdata);
}

static int get_score(momento__target t, const char *cache, const void *name, size_t name_len,
                     const void *value, size_t value_len, const momento_request_options *opts,
                     momento_callback cb, void *userdata)
{
    /* Checked here too, so that no allocation precedes a refusal. */
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    void *one = momento__one_item_new(cb, userdata);
    if (!one)
        return MOMENTO_ERR_NO_MEMORY;
    int rc = get_scores(t, cache, name, name_len, &value, &value_len, 1, opts,
                        momento__one_item_done, one);
    if (rc != MOMENTO_OK)
        free(one);
    return rc;
}

int momento_sorted_set_get_score(momento_client *c, const char *cache, const void *name,
                                 size_t name_len, const void *value, size_t value_len,
                                 const momento_request_options *opts, momento_callback cb,
                                 void *userdata)
{
    return get_score(momento__to_client(c), cache, name, name_len, value, value_len, opts, cb,
                     userdata);
}

int momento_coalescing_sorted_set_get_score(momento_coalescer *co, const char *cache,
                                            const void *name, size_t name_len, const void *value,
                                            size_t value_len, const momento_request_options *opts,
                                            momento_callback cb, void *userdata)
{
    return get_score(momento__to_coalescer(co), cache, name, name_len, value, value_len, opts, cb,
                     userdata);
}

static int get_rank(momento__target t, const char *cache, const void *name, size_t name_len,
                    const void *value, size_t value_len, momento_order order,
                    const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    MOMENTO__CHECK(check_order(order));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blob(&sz, value, value_len));
    CacheClient__SortedSetGetRankRequest req = CACHE_CLIENT____SORTED_SET_GET_RANK_REQUEST__INIT;
    req.set_name = momento__bytes(name, name_len);
    req.value = momento__bytes(value, value_len);
    req.order = order == MOMENTO_DESCENDING
                    ? CACHE_CLIENT____SORTED_SET_GET_RANK_REQUEST__ORDER__DESCENDING
                    : CACHE_CLIENT____SORTED_SET_GET_RANK_REQUEST__ORDER__ASCENDING;
    return momento__coll_read(t, MOMENTO__RPC_SORTED_SET_GET_RANK,
                              momento__decode_sorted_set_get_rank, cache, name, name_len, &req.base,
                              opts, cb, userdata);
}

int momento_sorted_set_get_rank(momento_client *c, const char *cache, const void *name,
                                size_t name_len, const void *value, size_t value_len,
                                momento_order order, const momento_request_options *opts,
                                momento_callback cb, void *userdata)
{
    return get_rank(momento__to_client(c), cache, name, name_len, value, value_len, order, opts,
                    cb, userdata);
}

int momento_coalescing_sorted_set_get_rank(momento_coalescer *co, const char *cache,
                                           const void *name, size_t name_len, const void *value,
                                           size_t value_len, momento_order order,
                                           const momento_request_options *opts,
                                           momento_callback cb, void *userdata)
{
    return get_rank(momento__to_coalescer(co), cache, name, name_len, value, value_len, order,
                    opts, cb, userdata);
}

int momento_sorted_set_increment_score(momento_client *c, const char *cache, const void *name,
                                       size_t name_len, const void *value, size_t value_len,
                                       double amount, const momento_collection_ttl *ttl,
                                       const momento_request_options *opts, momento_callback cb,
                                       void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blob(&sz, value, value_len));
    if (isnan(amount))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the amount is NaN");
    CacheClient__SortedSetIncrementRequest req = CACHE_CLIENT____SORTED_SET_INCREMENT_REQUEST__INIT;
    MOMENTO__CHECK(momento__coll_ttl(c, ttl, &req.ttl_milliseconds, &req.refresh_ttl));
    req.set_name = momento__bytes(name, name_len);
    req.value = momento__bytes(value, value_len);
    req.amount = amount;
    return momento__coll_write(c, MOMENTO__RPC_SORTED_SET_INCREMENT,
                               momento__decode_sorted_set_increment, cache, name, name_len,
                               &req.base, opts, cb, userdata);
}

int momento_sorted_set_remove_elements(momento_client *c, const char *cache, const void *name,
                                       size_t name_len, const void *const *values,
                                       const size_t *value_lens, size_t n,
                                       const momento_request_options *opts, momento_callback cb,
                                       void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, name, name_len, opts, cb));
    momento__size sz = {name_len};
    MOMENTO__CHECK(momento__check_blobs(&sz, values, value_lens, n));
    CacheClient__SortedSetRemoveRequest req = CACHE_CLIENT____SORTED_SET_REMOVE_REQUEST__INIT;
    CacheClient__SortedSetRemoveRequest__Some some =
        CACHE_CLIENT____SORTED_SET_REMOVE_REQUEST____SOME__INIT;
    req.set_name = momento__bytes(name, name_len);
    some.values = momento__blob_array(values, value_lens, n);
    if (!some.values)
        return MOMENTO_ERR_NO_MEMORY;
    some.n_values = n;
    req.remove_elements_case = CACHE_CLIENT____SORTED_SET_REMOVE_REQUEST__REMOVE_ELEMENTS_SOME;
    req.some = &some;
    int rc =
        momento__coll_write(c, MOMENTO__RPC_SORTED_SET_REMOVE, momento__decode_sorted_set_remove,
                            cache, name, name_len, &req.base, opts, cb, userdata);
    free(some.values);
    return rc;
}

int momento_sorted_set_remove_element(momento_client *c, const char *cache, const void *name,
                                      size_t name_len, const void *value, size_t value_len,
                                      const momento_request_options *opts, momento_callback cb,
                                      void *userdata)
{
    return momento_sorted_set_remove_elements(c, cache, name, name_len, &value, &value_len, 1,
                                              opts, cb, userdata);
}

static int length(momento__target t, const char *cache, const void *name, size_t name_len,
                  const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    CacheClient__SortedSetLengthRequest req = CACHE_CLIENT____SORTED_SET_LENGTH_REQUEST__INIT;
    req.set_name = momento__bytes(name, name_len);
    return momento__coll_read(t, MOMENTO__RPC_SORTED_SET_LENGTH, momento__decode_sorted_set_length,
                              cache, name, name_len, &req.base, opts, cb, userdata);
}

int momento_sorted_set_length(momento_client *c, const char *cache, const void *name,
                              size_t name_len, const momento_request_options *opts,
                              momento_callback cb, void *userdata)
{
    return length(momento__to_client(c), cache, name, name_len, opts, cb, userdata);
}

int momento_coalescing_sorted_set_length(momento_coalescer *co, const char *cache,
                                         const void *name, size_t name_len,
                                         const momento_request_options *opts, momento_callback cb,
                                         void *userdata)
{
    return length(momento__to_coalescer(co), cache, name, name_len, opts, cb, userdata);
}

static int length_by_score(momento__target t, const char *cache, const void *name,
                           size_t name_len, const momento_score_range *range,
                           const momento_request_options *opts, momento_callback cb,
                           void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(t.client, cache, name, name_len, opts, cb));
    static const momento_score_range everything;
    if (!range)
        range = &everything;
    MOMENTO__CHECK(check_score_range(range));
    CacheClient__SortedSetLengthByScoreRequest req =
        CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__INIT;
    CacheClient__Unbounded unbounded = CACHE_CLIENT____UNBOUNDED__INIT;
    req.set_name = momento__bytes(name, name_len);
    /* The wire's inclusive and exclusive bounds share a union: setting
     * either member sets the value, the case says which it is. */
    if (!bounded(&range->min, -INFINITY)) {
        req.min_case = CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__MIN_UNBOUNDED_MIN;
        req.unbounded_min = &unbounded;
    } else if (range->min.kind == MOMENTO_EXCLUSIVE) {
        req.min_case = CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__MIN_EXCLUSIVE_MIN;
        req.exclusive_min = range->min.score;
    } else {
        req.min_case = CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__MIN_INCLUSIVE_MIN;
        req.inclusive_min = range->min.score;
    }
    if (!bounded(&range->max, INFINITY)) {
        req.max_case = CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__MAX_UNBOUNDED_MAX;
        req.unbounded_max = &unbounded;
    } else if (range->max.kind == MOMENTO_EXCLUSIVE) {
        req.max_case = CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__MAX_EXCLUSIVE_MAX;
        req.exclusive_max = range->max.score;
    } else {
        req.max_case = CACHE_CLIENT____SORTED_SET_LENGTH_BY_SCORE_REQUEST__MAX_INCLUSIVE_MAX;
        req.inclusive_max = range->max.score;
    }
    return momento__coll_read(t, MOMENTO__RPC_SORTED_SET_LENGTH_BY_SCORE,
                              momento__decode_sorted_set_length_by_score, cache, name, name_len,
                              &req.base, opts, cb, userdata);
}

int momento_sorted_set_length_by_score(momento_client *c, const char *cache, const void *name,
                                       size_t name_len, double min, double max,
                                       const momento_request_options *opts, momento_callback cb,
                                       void *userdata)
{
    momento_score_range range = inclusive_range(min, max);
    return length_by_score(momento__to_client(c), cache, name, name_len, &range, opts, cb,
                           userdata);
}

int momento_sorted_set_length_by_score_range(momento_client *c, const char *cache,
                                             const void *name, size_t name_len,
                                             const momento_score_range *range,
                                             const momento_request_options *opts,
                                             momento_callback cb, void *userdata)
{
    return length_by_score(momento__to_client(c), cache, name, name_len, range, opts, cb,
                           userdata);
}

int momento_coalescing_sorted_set_length_by_score(momento_coalescer *co, const char *cache,
                                                  const void *name, size_t name_len, double min,
                                                  double max, const momento_request_options *opts,
                                                  momento_callback cb, void *userdata)
{
    momento_score_range range = inclusive_range(min, max);
    return length_by_score(momento__to_coalescer(co), cache, name, name_len, &range, opts, cb,
                           userdata);
}

int momento_coalescing_sorted_set_length_by_score_range(momento_coalescer *co, const char *cache,
                                                        const void *name, size_t name_len,
                                                        const momento_score_range *range,
                                                        const momento_request_options *opts,
                                                        momento_callback cb, void *userdata)
{
    return length_by_score(momento__to_coalescer(co), cache, name, name_len, range, opts, cb,
                           userdata);
}

/* Blocking forms. */

int momento_sorted_set_put_element_sync(momento_client *c, const char *cache, const void *name,
                                        size_t name_len, const void *value, size_t value_len,
                                        double score, const momento_collection_ttl *ttl,
                                        const momento_request_options *opts,
                                        momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_put_element(c, cache, name, name_len, value, value_len, score,
                                                 ttl, opts, MOMENTO__SYNC_CB));
}

int momento_sorted_set_put_elements_sync(momento_client *c, const char *cache, const void *name,
                                         size_t name_len, const void *const *values,
                                         const size_t *value_lens, const double *scores,
                                         size_t n, const momento_collection_ttl *ttl,
                                         const momento_request_options *opts,
                                         momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_put_elements(c, cache, name, name_len, values, value_lens,
                                                  scores, n, ttl, opts, MOMENTO__SYNC_CB));
}

int momento_sorted_set_fetch_by_rank_sync(momento_client *c, const char *cache, const void *name,
                                          size_t name_len, int32_t start, int32_t end,
                                          momento_order order,
                                          const momento_request_options *opts,
                                          momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_fetch_by_rank(c, cache, name, name_len, start, end, order,
                                                   opts, MOMENTO__SYNC_CB));
}

int momento_sorted_set_fetch_by_score_sync(momento_client *c, const char *cache, const void *name,
                                           size_t name_len, double min, double max,
                                           momento_order order, uint32_t offset, uint32_t count,
                                           const momento_request_options *opts,
                                           momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_fetch_by_score(c, cache, name, name_len, min, max, order,
                                                    offset, count, opts, MOMENTO__SYNC_CB));
}

int momento_sorted_set_fetch_by_score_range_sync(momento_client *c, const char *cache,
                                                 const void *name, size_t name_len,
                                                 const momento_score_range *range,
                                                 momento_order order, uint32_t offset,
                                                 uint32_t count,
                                                 const momento_request_options *opts,
                                                 momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_fetch_by_score_range(c, cache, name, name_len, range, order,
                                                          offset, count, opts, MOMENTO__SYNC_CB));
}

int momento_sorted_set_get_score_sync(momento_client *c, const char *cache, const void *name,
                                      size_t name_len, const void *value, size_t value_len,
                                      const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_get_score(c, cache, name, name_len, value, value_len, opts,
                                               MOMENTO__SYNC_CB));
}

int momento_sorted_set_get_scores_sync(momento_client *c, const char *cache, const void *name,
                                       size_t name_len, const void *const *values,
                                       const size_t *value_lens, size_t n,
                                       const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_get_scores(c, cache, name, name_len, values, value_lens, n,
                                                opts, MOMENTO__SYNC_CB));
}

int momento_sorted_set_get_rank_sync(momento_client *c, const char *cache, const void *name,
                                     size_t name_len, const void *value, size_t value_len,
                                     momento_order order, const momento_request_options *opts,
                                     momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_get_rank(c, cache, name, name_len, value, value_len, order,
                                              opts, MOMENTO__SYNC_CB));
}

int momento_sorted_set_increment_score_sync(momento_client *c, const char *cache,
                                            const void *name, size_t name_len, const void *value,
                                            size_t value_len, double amount,
                                            const momento_collection_ttl *ttl,
                                            const momento_request_options *opts,
                                            momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_increment_score(c, cache, name, name_len, value, value_len,
                                                     amount, ttl, opts, MOMENTO__SYNC_CB));
}

int momento_sorted_set_remove_element_sync(momento_client *c, const char *cache,
                                           const void *name, size_t name_len, const void *value,
                                           size_t value_len, const momento_request_options *opts,
                                           momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_remove_element(c, cache, name, name_len, value, value_len,
                                                    opts, MOMENTO__SYNC_CB));
}

int momento_sorted_set_remove_elements_sync(momento_client *c, const char *cache,
                                            const void *name, size_t name_len,
                                            const void *const *values, const size_t *value_lens,
                                            size_t n, const momento_request_options *opts,
                                            momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_remove_elements(c, cache, name, name_len, values, value_lens,
                                                     n, opts, MOMENTO__SYNC_CB));
}

int momento_sorted_set_length_sync(momento_client *c, const char *cache, const void *name,
                                   size_t name_len, const momento_request_options *opts,
                                   momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_length(c, cache, name, name_len, opts, MOMENTO__SYNC_CB));
}

int momento_sorted_set_length_by_score_sync(momento_client *c, const char *cache,
                                            const void *name, size_t name_len, double min,
                                            double max, const momento_request_options *opts,
                                            momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_length_by_score(c, cache, name, name_len, min, max, opts,
                                                     MOMENTO__SYNC_CB));
}

int momento_sorted_set_length_by_score_range_sync(momento_client *c, const char *cache,
                                                  const void *name, size_t name_len,
                                                  const momento_score_range *range,
                                                  const momento_request_options *opts,
                                                  momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_length_by_score_range(c, cache, name, name_len, range, opts,
                                                           MOMENTO__SYNC_CB));
}

int momento_sorted_set_union_store(momento_client *c, const char *cache, const void *dest,
                                   size_t dest_len, const momento_sorted_set_source *sources,
                                   size_t n, momento_aggregate agg, uint64_t ttl_ms,
                                   const momento_request_options *opts, momento_callback cb,
                                   void *userdata)
{
    MOMENTO__CHECK(momento__check_coll_request(c, cache, dest, dest_len, opts, cb));
    MOMENTO__CHECK(momento__check_ttl(ttl_ms));
    if (!sources)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the sources are NULL");
    if (n == 0 || n > MOMENTO_MAX_UNION_SOURCES)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "%zu sources: a union takes 1 to %d (MOMENTO_MAX_UNION_SOURCES)", n,
                               MOMENTO_MAX_UNION_SOURCES);
    if ((unsigned)agg > MOMENTO_AGGREGATE_MAX)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "aggregate %d is not a "
                               "momento_aggregate", (int)agg);
    for (size_t i = 0; i < n; i++) {
        /* Each source is a collection name, checked as one. */
        int rc = momento__check_coll_request(c, cache, sources[i].name, sources[i].name_len, opts,
                                             cb);
        if (rc != MOMENTO_OK) {
            char why[200]; /* the reason's own buffer is what refuse() writes */
            snprintf(why, sizeof(why), "%s", momento_refusal_reason());
            return momento__refuse(rc, "source %zu: %s", i, why);
        }
        if (isnan(sources[i].weight) || isinf(sources[i].weight))
            return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                                   "source %zu's weight is not a finite number", i);
    }
    CacheClient__SortedSetUnionStoreRequest__Source *items = momento__malloc(n * sizeof(*items));
    CacheClient__SortedSetUnionStoreRequest__Source **ptrs = momento__malloc(n * sizeof(*ptrs));
    if (!items || !ptrs) {
        free(items);
        free(ptrs);
        return MOMENTO_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        cache_client____sorted_set_union_store_request____source__init(&items[i]);
        items[i].set_name = momento__bytes(sources[i].name, sources[i].name_len);
        items[i].weight = sources[i].weight;
        ptrs[i] = &items[i];
    }
    CacheClient__SortedSetUnionStoreRequest req =
        CACHE_CLIENT____SORTED_SET_UNION_STORE_REQUEST__INIT;
    req.set_name = momento__bytes(dest, dest_len);
    req.n_sources = n;
    req.sources = ptrs;
    req.aggregate = (CacheClient__SortedSetUnionStoreRequest__AggregateFunction)agg;
    req.ttl_milliseconds = momento__effective_ttl(&c->cfg, ttl_ms);
    int rc = momento__coll_write(c, MOMENTO__RPC_SORTED_SET_UNION_STORE,
                                 momento__decode_sorted_set_union_store, cache, dest, dest_len,
                                 &req.base, opts, cb, userdata);
    free(items); /* packed at submit */
    free(ptrs);
    return rc;
}

int momento_sorted_set_union_store_sync(momento_client *c, const char *cache, const void *dest,
                                        size_t dest_len, const momento_sorted_set_source *sources,
                                        size_t n, momento_aggregate agg, uint64_t ttl_ms,
                                        const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_sorted_set_union_store(c, cache, dest, dest_len, sources, n, agg, ttl_ms,
                                                 opts, MOMENTO__SYNC_CB));
}
