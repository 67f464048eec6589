/*
 * libmomento leaderboards: Momento's leaderboard service
 * (leaderboard.Leaderboard), the SDKs' `PreviewLeaderboardClient`.
 *
 * A leaderboard lives in a cache under its own name (not a cache key: a
 * leaderboard and a key of the same name are unrelated) and holds elements:
 * an id (uint32_t, one score per id) and a score (a double, never NaN or
 * infinite). Elements are ranked by score - ascending: rank 0 is the
 * lowest score; descending: rank 0 is the highest - and elements of equal
 * score by id.
 *
 * Every function here follows the rules of momento.h: the same return codes
 * for async calls (MOMENTO_OK means exactly one callback follows), copy-in
 * arguments, results borrowed inside the callback (momento_result_dup() to
 * keep one), a `_sync` form beside each async function with momento.h's
 * blocking rules, and `opts` (NULL = the client's defaults) before the
 * callback. Any thread may call them.
 *
 * Arguments, besides momento.h's rules for `c`, `cache`, `opts` and `cb`:
 *  - `leaderboard` is a non-empty NUL-terminated UTF-8 string;
 *  - arrays of elements or ids are non-NULL with n >= 1; Momento takes at
 *    most MOMENTO_LEADERBOARD_MAX_ELEMENTS per call, and refuses more
 *    (INVALID_ARGUMENT, from the server);
 *  - `order` is MOMENTO_ASCENDING or MOMENTO_DESCENDING (collections.h's
 *    momento_order).
 * Otherwise the call returns MOMENTO_ERR_INVALID_ARGUMENT and
 * momento_refusal_reason() says why.
 *
 * Reading results: the outcome is SUCCESS. A read's elements are the
 * result's items (momento_result_item_count()); momento_result_ranked()
 * reads the i-th as a momento_ranked_element. A leaderboard that does not
 * exist reads as an empty one: no elements, length 0. No leaderboard call
 * goes through the coalescer or the batcher; every one is its own RPC.
 */
#ifndef MOMENTO_LEADERBOARDS_H
#define MOMENTO_LEADERBOARDS_H

#include "momento/collections.h" /* momento_order */
#include "momento/momento.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most elements (or ids) one upsert, remove or rank call may carry, and
 * the most one fetch returns (Momento's limit). */
#define MOMENTO_LEADERBOARD_MAX_ELEMENTS 8192

/* An element to upsert. */
typedef struct momento_leaderboard_element {
    uint32_t id;
    double score; /* finite */
} momento_leaderboard_element;

/* An element as a read returns it, with its rank in the order asked for
 * (0-based; for momento_leaderboard_get_competition_rank(), the competition
 * rank: equal scores share the rank of the first of them). */
typedef struct momento_ranked_element {
    uint32_t id;
    uint32_t rank;
    double score;
} momento_ranked_element;

/* The i-th element of a leaderboard read's result (fetch by rank or score,
 * get rank, get competition rank) into *ret. Returns 0, or
 * MOMENTO_ERR_INVALID_ARGUMENT (NULL `r` or `ret`, `i` past
 * momento_result_item_count(), or a result that is not a leaderboard
 * read's); *ret is then zeroed. Thread rules as for every accessor: the
 * result's reader's. */
MOMENTO_EXPORT int momento_result_ranked(const momento_result *r, size_t i,
                                         momento_ranked_element *ret);

/* Inserts elements, or gives an existing id its new score. All or nothing:
 * Momento never applies part of an upsert. A score that is NaN or infinite
 * is refused. Outcome SUCCESS. */
MOMENTO_EXPORT int momento_leaderboard_upsert(momento_client *c, const char *cache,
                                              const char *leaderboard,
                                              const momento_leaderboard_element *elements,
                                              size_t n, const momento_request_options *opts,
                                              momento_callback cb, void *userdata);
/* Removes the elements of these ids (ids not there are ignored). Outcome
 * SUCCESS. */
MOMENTO_EXPORT int momento_leaderboard_remove_elements(momento_client *c, const char *cache,
                                                       const char *leaderboard,
                                                       const uint32_t *ids, size_t n,
                                                       const momento_request_options *opts,
                                                       momento_callback cb, void *userdata);
/* Deletes the whole leaderboard (one that does not exist too). Outcome
 * SUCCESS. */
MOMENTO_EXPORT int momento_leaderboard_delete(momento_client *c, const char *cache,
                                              const char *leaderboard,
                                              const momento_request_options *opts,
                                              momento_callback cb, void *userdata);
/* Outcome SUCCESS with the number of elements as momento_result_int(). */
MOMENTO_EXPORT int momento_leaderboard_length(momento_client *c, const char *cache,
                                              const char *leaderboard,
                                              const momento_request_options *opts,
                                              momento_callback cb, void *userdata);
/* Outcome SUCCESS with the elements of ranks [start, end) in `order` (fewer
 * when the leaderboard ends before `end`). start < end, and Momento refuses
 * a range of more than MOMENTO_LEADERBOARD_MAX_ELEMENTS ranks. */
MOMENTO_EXPORT int momento_leaderboard_fetch_by_rank(momento_client *c, const char *cache,
                                                     const char *leaderboard, uint32_t start,
                                                     uint32_t end, momento_order order,
                                                     const momento_request_options *opts,
                                                     momento_callback cb, void *userdata);
/* Outcome SUCCESS with the elements scored in [min, max) - -INFINITY and
 * INFINITY mean no bound; neither NaN, min <= max - in `order`, skipping the
 * first `offset` of them and returning at most `count` (0: the most Momento
 * returns, MOMENTO_LEADERBOARD_MAX_ELEMENTS). Ranks are the elements' own
 * in the whole leaderboard. */
MOMENTO_EXPORT int momento_leaderboard_fetch_by_score(momento_client *c, const char *cache,
                                                      const char *leaderboard, double min,
                                                      double max, momento_order order,
                                                      uint32_t offset, uint32_t count,
                                                      const momento_request_options *opts,
                                                      momento_callback cb, void *userdata);
/* Outcome SUCCESS with the element of each id that is in the leaderboard
 * (ids not there are left out), ranked in `order`. */
MOMENTO_EXPORT int momento_leaderboard_get_rank(momento_client *c, const char *cache,
                                                const char *leaderboard, const uint32_t *ids,
                                                size_t n, momento_order order,
                                                const momento_request_options *opts,
                                                momento_callback cb, void *userdata);
/* As momento_leaderboard_get_rank(), with competition ranks ("1224"
 * ranking): elements of equal score share the rank of the first of them in
 * `order`, and the next score's rank counts every element before it. The
 * SDKs default this one to MOMENTO_DESCENDING. */
MOMENTO_EXPORT int momento_leaderboard_get_competition_rank(momento_client *c, const char *cache,
                                                            const char *leaderboard,
                                                            const uint32_t *ids, size_t n,
                                                            momento_order order,
                                                            const momento_request_options *opts,
                                                            momento_callback cb, void *userdata);

/* Blocking forms: as above, with momento.h's blocking rules (the result in
 * *ret to free with momento_result_free(), the request's error returned). */
MOMENTO_EXPORT int momento_leaderboard_upsert_sync(momento_client *c, const char *cache,
                                                   const char *leaderboard,
                                                   const momento_leaderboard_element *elements,
                                                   size_t n, const momento_request_options *opts,
                                                   momento_result **ret);
MOMENTO_EXPORT int momento_leaderboard_remove_elements_sync(momento_client *c, const char *cache,
                                                            const char *leaderboard,
                                                            const uint32_t *ids, size_t n,
                                                            const momento_request_options *opts,
                                                            momento_result **ret);
MOMENTO_EXPORT int momento_leaderboard_delete_sync(momento_client *c, const char *cache,
                                                   const char *leaderboard,
                                                   const momento_request_options *opts,
                                                   momento_result **ret);
MOMENTO_EXPORT int momento_leaderboard_length_sync(momento_client *c, const char *cache,
                                                   const char *leaderboard,
                                                   const momento_request_options *opts,
                                                   momento_result **ret);
MOMENTO_EXPORT int momento_leaderboard_fetch_by_rank_sync(momento_client *c, const char *cache,
                                                          const char *leaderboard, uint32_t start,
                                                          uint32_t end, momento_order order,
                                                          const momento_request_options *opts,
                                                          momento_result **ret);
MOMENTO_EXPORT int momento_leaderboard_fetch_by_score_sync(momento_client *c, const char *cache,
                                                           const char *leaderboard, double min,
                                                           double max, momento_order order,
                                                           uint32_t offset, uint32_t count,
                                                           const momento_request_options *opts,
                                                           momento_result **ret);
MOMENTO_EXPORT int momento_leaderboard_get_rank_sync(momento_client *c, const char *cache,
                                                     const char *leaderboard, const uint32_t *ids,
                                                     size_t n, momento_order order,
                                                     const momento_request_options *opts,
                                                     momento_result **ret);
MOMENTO_EXPORT int momento_leaderboard_get_competition_rank_sync(
    momento_client *c, const char *cache, const char *leaderboard, const uint32_t *ids, size_t n,
    momento_order order, const momento_request_options *opts, momento_result **ret);

#ifdef __cplusplus
}
#endif

#endif
