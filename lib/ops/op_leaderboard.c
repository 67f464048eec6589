/* Leaderboards: Momento's leaderboard.Leaderboard service (leaderboards.h).
 * Each call is one RPC on the data plane, the cache in the `cache` header
 * as for every data call, the leaderboard's name in the request. No call
 * here goes through the coalescer or the batcher: a leaderboard is not a
 * cache key, so neither could close a coalesced read on its writes. */
#include "ops/collection.h"

#include "leaderboard.pb-c.h"
#include "model/result.h"
#include "momento/leaderboards.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ decoders */

MOMENTO__EMPTY_DECODER(delete_leaderboard, MOMENTO_OUTCOME_SUCCESS)

MOMENTO__EMPTY_DECODER(upsert_elements, MOMENTO_OUTCOME_SUCCESS)

MOMENTO__EMPTY_DECODER(remove_elements, MOMENTO_OUTCOME_SUCCESS)

MOMENTO__NUMBER_DECODER(get_leaderboard_length, GET_LEADERBOARD_LENGTH,
                        Leaderboard__GetLeaderboardLengthResponse, int_value, count)

/* The elements of a read's reply as the result's items: id, rank (as
 * momento_result_int() too) and score. */
static int ranked_items(momento_result *r, momento__scratch *scratch, size_t n,
                        Leaderboard__RankedElement *const *elements)
{
    momento_result *items = momento__items_new(scratch, n, MOMENTO_OUTCOME_HIT);
    if (!items)
        return MOMENTO_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) {
        if (!elements[i])
            return MOMENTO_ERR_BAD_RESPONSE;
        items[i].element_id = elements[i]->id;
        items[i].int_value = elements[i]->rank;
        items[i].score = elements[i]->score;
    }
    r->items = items;
    r->n_items = n;
    r->outcome = MOMENTO_OUTCOME_SUCCESS;
    return MOMENTO_OK;
}

/* The four reads' replies are the same message under four names. */
#define RANKED_DECODER(fn, ID, Type)                                                               \
    MOMENTO__DECODER(fn)                                                                           \
    {                                                                                              \
        MOMENTO__UNPACK_ONE(Type, ID);                                                             \
        return ranked_items(r, scratch, m->n_elements, m->elements);                               \
    }
RANKED_DECODER(get_by_rank, GET_BY_RANK, Leaderboard__GetByRankResponse)
RANKED_DECODER(get_by_score, GET_BY_SCORE, Leaderboard__GetByScoreResponse)
RANKED_DECODER(get_rank, GET_RANK, Leaderboard__GetRankResponse)
RANKED_DECODER(get_competition_rank, GET_COMPETITION_RANK,
               Leaderboard__GetCompetitionRankResponse)

int momento_result_ranked(const momento_result *r, size_t i, momento_ranked_element *ret)
{
    if (ret)
        memset(ret, 0, sizeof(*ret));
    if (!r || !ret)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the result or *ret is NULL");
    int rpc = r->rpc - 1;
    if (rpc != MOMENTO__RPC_GET_BY_RANK && rpc != MOMENTO__RPC_GET_BY_SCORE &&
        rpc != MOMENTO__RPC_GET_RANK &&
        rpc != MOMENTO__RPC_GET_COMPETITION_RANK)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "not a leaderboard read's result");
    if (i >= r->n_items)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "element %zu of %zu", i, r->n_items);
    const momento_result *it = &r->items[i];
    ret->id = it->element_id;
    ret->rank = (uint32_t)it->int_value;
    ret->score = it->score;
    return MOMENTO_OK;
}

/* ------------------------------------------------------------ checks */

/* A client, a cache, a leaderboard name, options and a callback. */
static int check_request(const momento_client *c, const char *cache, const char *leaderboard,
                         const momento_request_options *opts, momento_callback cb)
{
    MOMENTO__CHECK(momento__check_cache_request(c, cache, opts, cb));
    if (!leaderboard)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the leaderboard name is NULL");
    size_t len = strlen(leaderboard);
    if (len == 0)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "leaderboard name must not be empty");
    if (len > MOMENTO__MAX_REQUEST_BYTES / 2)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "the leaderboard name is over %d bytes",
                               MOMENTO__MAX_REQUEST_BYTES / 2);
    return momento__check_utf8(leaderboard, len);
}

static int check_order(momento_order order)
{
    return order == MOMENTO_ASCENDING || order == MOMENTO_DESCENDING
               ? MOMENTO_OK
               : momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "unknown order %d", (int)order);
}

/* n ids or elements: not NULL, at least one; a count Momento would refuse
 * is left to it (its INVALID_ARGUMENT says its limit), but one that could
 * not be packed into a request is refused here. */
static int check_count(const void *p, size_t n, size_t each)
{
    if (!p)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the array is NULL");
    if (n == 0)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "must provide at least one element");
    if (n > MOMENTO__MAX_REQUEST_BYTES / each)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "%zu elements would be over %d bytes", n,
                               MOMENTO__MAX_REQUEST_BYTES);
    return MOMENTO_OK;
}

static Leaderboard__Order wire_order(momento_order order)
{
    return order == MOMENTO_DESCENDING ? LEADERBOARD____ORDER__DESCENDING
                                       : LEADERBOARD____ORDER__ASCENDING;
}

/* ------------------------------------------------------------ calls */

int momento_leaderboard_upsert(momento_client *c, const char *cache, const char *leaderboard,
                               const momento_leaderboard_element *elements, size_t n,
                               const momento_request_options *opts, momento_callback cb,
                               void *userdata)
{
    MOMENTO__CHECK(check_request(c, cache, leaderboard, opts, cb));
    MOMENTO__CHECK(check_count(elements, n, 16));
    for (size_t i = 0; i < n; i++)
        if (!isfinite(elements[i].score))
            return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                                   "the score of element %zu (id %u) is NaN or infinite", i,
                                   (unsigned)elements[i].id);
    Leaderboard__UpsertElementsRequest req = LEADERBOARD____UPSERT_ELEMENTS_REQUEST__INIT;
    req.leaderboard = (char *)leaderboard; /* packed at submit */
    Leaderboard__Element *els = momento__malloc(n * sizeof(*els));
    Leaderboard__Element **ptrs = momento__malloc(n * sizeof(*ptrs));
    int rc = MOMENTO_ERR_NO_MEMORY;
    if (els && ptrs) {
        for (size_t i = 0; i < n; i++) {
            leaderboard____element__init(&els[i]);
            els[i].id = elements[i].id;
            els[i].score = elements[i].score;
            ptrs[i] = &els[i];
        }
        req.n_elements = n;
        req.elements = ptrs;
        rc = momento__call_start(c, MOMENTO__RPC_UPSERT_ELEMENTS, momento__decode_upsert_elements,
                                 cache, &req.base, opts, cb, userdata);
    }
    free(els); /* the request was packed at submit */
    free(ptrs);
    return rc;
}

int momento_leaderboard_remove_elements(momento_client *c, const char *cache,
                                        const char *leaderboard, const uint32_t *ids, size_t n,
                                        const momento_request_options *opts, momento_callback cb,
                                        void *userdata)
{
    MOMENTO__CHECK(check_request(c, cache, leaderboard, opts, cb));
    MOMENTO__CHECK(check_count(ids, n, 8));
    Leaderboard__RemoveElementsRequest req = LEADERBOARD____REMOVE_ELEMENTS_REQUEST__INIT;
    req.leaderboard = (char *)leaderboard; /* packed at submit */
    req.n_ids = n;
    req.ids = (uint32_t *)ids; /* read only, by the packing at submit */
    return momento__call_start(c, MOMENTO__RPC_REMOVE_ELEMENTS, momento__decode_remove_elements,
                               cache, &req.base, opts, cb, userdata);
}

int momento_leaderboard_delete(momento_client *c, const char *cache, const char *leaderboard,
                               const momento_request_options *opts, momento_callback cb,
                               void *userdata)
{
    MOMENTO__CHECK(check_request(c, cache, leaderboard, opts, cb));
    Leaderboard__DeleteLeaderboardRequest req = LEADERBOARD____DELETE_LEADERBOARD_REQUEST__INIT;
    req.leaderboard = (char *)leaderboard; /* packed at submit */
    return momento__call_start(c, MOMENTO__RPC_DELETE_LEADERBOARD,
                               momento__decode_delete_leaderboard, cache, &req.base, opts, cb,
                               userdata);
}

int momento_leaderboard_length(momento_client *c, const char *cache, const char *leaderboard,
                               const momento_request_options *opts, momento_callback cb,
                               void *userdata)
{
    MOMENTO__CHECK(check_request(c, cache, leaderboard, opts, cb));
    Leaderboard__GetLeaderboardLengthRequest req =
        LEADERBOARD____GET_LEADERBOARD_LENGTH_REQUEST__INIT;
    req.leaderboard = (char *)leaderboard; /* packed at submit */
    return momento__call_start(c, MOMENTO__RPC_GET_LEADERBOARD_LENGTH,
                               momento__decode_get_leaderboard_length, cache, &req.base, opts, cb,
                               userdata);
}

int momento_leaderboard_fetch_by_rank(momento_client *c, const char *cache,
                                      const char *leaderboard, uint32_t start_rank,
                                      uint32_t end_rank, momento_order order,
                                      const momento_request_options *opts, momento_callback cb,
                                      void *userdata)
{
    MOMENTO__CHECK(check_request(c, cache, leaderboard, opts, cb));
    MOMENTO__CHECK(check_order(order));
    if (start_rank >= end_rank)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "start rank must be less than end rank (%u, %u)",
                               (unsigned)start_rank, (unsigned)end_rank);
    Leaderboard__GetByRankRequest req = LEADERBOARD____GET_BY_RANK_REQUEST__INIT;
    Leaderboard__RankRange range = LEADERBOARD____RANK_RANGE__INIT;
    range.start_inclusive = start_rank;
    range.end_exclusive = end_rank;
    req.leaderboard = (char *)leaderboard; /* packed at submit */
    req.rank_range = &range;
    req.order = wire_order(order);
    return momento__call_start(c, MOMENTO__RPC_GET_BY_RANK, momento__decode_get_by_rank,
                               cache, &req.base, opts, cb, userdata);
}

int momento_leaderboard_fetch_by_score(momento_client *c, const char *cache,
                                       const char *leaderboard, double min, double max,
                                       momento_order order, uint32_t offset, uint32_t count,
                                       const momento_request_options *opts, momento_callback cb,
                                       void *userdata)
{
    MOMENTO__CHECK(check_request(c, cache, leaderboard, opts, cb));
    MOMENTO__CHECK(check_order(order));
    if (isnan(min) || isnan(max))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "a score bound is NaN");
    if (min > max)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "minScore must be less than or equal to maxScore (%g > %g)", min,
                               max);
    Leaderboard__GetByScoreRequest req = LEADERBOARD____GET_BY_SCORE_REQUEST__INIT;
    Leaderboard__ScoreRange range = LEADERBOARD____SCORE_RANGE__INIT;
    Leaderboard__Unbounded unbounded = LEADERBOARD____UNBOUNDED__INIT;
    /* An infinite bound goes as the open end: Momento takes no infinity. */
    if (min == -INFINITY) {
        range.min_case = LEADERBOARD____SCORE_RANGE__MIN_UNBOUNDED_MIN;
        range.unbounded_min = &unbounded;
    } else {
        range.min_case = LEADERBOARD____SCORE_RANGE__MIN_MIN_INCLUSIVE;
        range.min_inclusive = min;
    }
    if (max == INFINITY) {
        range.max_case = LEADERBOARD____SCORE_RANGE__MAX_UNBOUNDED_MAX;
        range.unbounded_max = &unbounded;
    } else {
        range.max_case = LEADERBOARD____SCORE_RANGE__MAX_MAX_EXCLUSIVE;
        range.max_exclusive = max;
    }
    req.leaderboard = (char *)leaderboard; /* packed at submit */
    req.score_range = &range;
    req.offset = offset;
    req.limit_elements = count ? count : MOMENTO_LEADERBOARD_MAX_ELEMENTS;
    req.order = wire_order(order);
    return momento__call_start(c, MOMENTO__RPC_GET_BY_SCORE,
                               momento__decode_get_by_score, cache, &req.base, opts, cb, userdata);
}

/* The checks of the two rank reads, which take the same arguments: the
 * request, its ids (an array that fits a request, check_count()) and an
 * order. */
static int check_rank_request(momento_client *c, const char *cache, const char *leaderboard,
                              const uint32_t *ids, size_t n, momento_order order,
                              const momento_request_options *opts, momento_callback cb)
{
    MOMENTO__CHECK(check_request(c, cache, leaderboard, opts, cb));
    MOMENTO__CHECK(check_order(order));
    return check_count(ids, n, 8);
}

int momento_leaderboard_get_rank(momento_client *c, const char *cache, const char *leaderboard,
                                 const uint32_t *ids, size_t n, momento_order order,
                                 const momento_request_options *opts, momento_callback cb,
                                 void *userdata)
{
    MOMENTO__CHECK(check_rank_request(c, cache, leaderboard, ids, n, order, opts, cb));
    Leaderboard__GetRankRequest req = LEADERBOARD____GET_RANK_REQUEST__INIT;
    req.leaderboard = (char *)leaderboard; /* packed at submit */
    req.n_ids = n;
    req.ids = (uint32_t *)ids;
    req.order = wire_order(order);
    return momento__call_start(c, MOMENTO__RPC_GET_RANK, momento__decode_get_rank, cache,
                               &req.base, opts, cb, userdata);
}

int momento_leaderboard_get_competition_rank(momento_client *c, const char *cache,
                                             const char *leaderboard, const uint32_t *ids,
                                             size_t n, momento_order order,
                                             const momento_request_options *opts,
                                             momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(check_rank_request(c, cache, leaderboard, ids, n, order, opts, cb));
    Leaderboard__GetCompetitionRankRequest req = LEADERBOARD____GET_COMPETITION_RANK_REQUEST__INIT;
    req.leaderboard = (char *)leaderboard; /* packed at submit */
    req.n_ids = n;
    req.ids = (uint32_t *)ids;
    /* Always sent: left out, Momento ranks descending, and the caller said
     * which. */
    req._order_case = LEADERBOARD____GET_COMPETITION_RANK_REQUEST___ORDER_ORDER;
    req.order = wire_order(order);
    return momento__call_start(c, MOMENTO__RPC_GET_COMPETITION_RANK,
                               momento__decode_get_competition_rank, cache, &req.base, opts, cb,
                 userdata);
}

/* ------------------------------------------------------------ blocking */

int momento_leaderboard_upsert_sync(momento_client *c, const char *cache, const char *leaderboard,
                                    const momento_leaderboard_element *elements, size_t n,
                                    const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_leaderboard_upsert(c, cache, leaderboard, elements, n, opts,
                                             MOMENTO__SYNC_CB));
}

int momento_leaderboard_remove_elements_sync(momento_client *c, const char *cache,
                                             const char *leaderboard, const uint32_t *ids,
                                             size_t n, const momento_request_options *opts,
                                             momento_result **ret)
{
    MOMENTO__SYNC(momento_leaderboard_remove_elements(c, cache, leaderboard, ids, n, opts,
                                                      MOMENTO__SYNC_CB));
}

int momento_leaderboard_delete_sync(momento_client *c, const char *cache, const char *leaderboard,
                                    const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_leaderboard_delete(c, cache, leaderboard, opts, MOMENTO__SYNC_CB));
}

int momento_leaderboard_length_sync(momento_client *c, const char *cache, const char *leaderboard,
                                    const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_leaderboard_length(c, cache, leaderboard, opts, MOMENTO__SYNC_CB));
}

int momento_leaderboard_fetch_by_rank_sync(momento_client *c, const char *cache,
                                           const char *leaderboard, uint32_t start_rank,
                                           uint32_t end_rank, momento_order order,
                                           const momento_request_options *opts,
                                           momento_result **ret)
{
    MOMENTO__SYNC(momento_leaderboard_fetch_by_rank(c, cache, leaderboard, start_rank, end_rank,
                                                    order, opts, MOMENTO__SYNC_CB));
}

int momento_leaderboard_fetch_by_score_sync(momento_client *c, const char *cache,
                                            const char *leaderboard, double min, double max,
                                            momento_order order, uint32_t offset, uint32_t count,
                                            const momento_request_options *opts,
                                            momento_result **ret)
{
    MOMENTO__SYNC(momento_leaderboard_fetch_by_score(c, cache, leaderboard, min, max, order,
                                                     offset, count, opts, MOMENTO__SYNC_CB));
}

int momento_leaderboard_get_rank_sync(momento_client *c, const char *cache,
                                      const char *leaderboard, const uint32_t *ids, size_t n,
                                      momento_order order, const momento_request_options *opts,
                                      momento_result **ret)
{
    MOMENTO__SYNC(momento_leaderboard_get_rank(c, cache, leaderboard, ids, n, order, opts,
                                               MOMENTO__SYNC_CB));
}

int momento_leaderboard_get_competition_rank_sync(momento_client *c, const char *cache,
                                                  const char *leaderboard, const uint32_t *ids,
                                                  size_t n, momento_order order,
                                                  const momento_request_options *opts,
                                                  momento_result **ret)
{
    MOMENTO__SYNC(momento_leaderboard_get_competition_rank(c, cache, leaderboard, ids, n, order,
                                                           opts, MOMENTO__SYNC_CB));
}
