/*
 * libmomento collections: Momento's dictionaries, sets, lists and sorted
 * sets, each stored under one cache key (its "name").
 *
 * Names: `momento_set_*` means two things. momento_set(), momento_set_if*()
 * and momento_set_with_hash() (momento.h) write a scalar value;
 * momento_set_add_element(), momento_set_fetch(), momento_set_pop() and the
 * other functions of the "set" section below work on a Set collection. A
 * collection function always names its collection right after the prefix
 * (momento_dictionary_, momento_set_add_/_remove_/_fetch/..., momento_list_,
 * momento_sorted_set_).
 *
 * Every function here follows the rules of momento.h: the same return codes
 * for async calls (MOMENTO_OK means exactly one callback follows), copy-in
 * arguments, results borrowed inside the callback (momento_result_dup() to
 * keep one), a `_sync` form beside each async function with momento.h's
 * blocking rules, and `opts` (NULL = the client's defaults) before the
 * callback. Any thread may call them.
 *
 * Arguments, besides momento.h's rules for `c`, `cache`, `opts` and `cb`:
 *  - a collection's `name` is a key: non-NULL, 1+ bytes;
 *  - fields, elements and values may be empty (NULL only with length 0);
 *    a name plus everything sent with it must fit one request (about
 *    10 MiB) - otherwise MOMENTO_ERR_INVALID_ARGUMENT;
 *  - lists of them are `items[i]` of `lens[i]` bytes, n >= 1;
 *  - `ttl` (NULL = MOMENTO_COLLECTION_TTL_DEFAULT) is the collection's TTL,
 *    as Momento's CollectionTtl.
 *
 * Reading results: the outcome is SUCCESS for writes, HIT or MISS for reads
 * (MISS: the collection does not exist - Momento deletes a collection when
 * its last element goes - or, for momento_list_fetch() alone, the slice
 * asked for holds no element). Collections of elements are the result's items
 * (momento_result_item_count() / momento_result_item()), in the order
 * Momento returns them, each a HIT with momento_result_value() and, for a
 * dictionary, momento_result_field(), for a sorted set,
 * momento_result_score(). Lengths, ranks and integer increments are
 * momento_result_int(); scores are momento_result_score().
 *
 * A collection operation on a key that holds another type fails with
 * MOMENTO_ERR_FAILED_PRECONDITION in the callback.
 */
#ifndef MOMENTO_COLLECTIONS_H
#define MOMENTO_COLLECTIONS_H

#include "momento/momento.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A collection's TTL on a write (Momento's CollectionTtl): a value passed
 * with each write, like a scalar write's ttl_ms, not configuration; its two
 * fields are the two the protocol carries. A write that
 * creates the collection gives it `ttl_ms` (0 = the client's default TTL);
 * a write to an existing collection resets its TTL to that only when
 * `refresh` is non-zero, and otherwise leaves it alone. */
typedef struct momento_collection_ttl {
    uint64_t ttl_ms;
    int refresh;
} momento_collection_ttl;
/* What NULL means: the client's default TTL, refreshed on every write
 * (CollectionTtl.fromCacheTtl()). */
#define MOMENTO_COLLECTION_TTL_DEFAULT {0, 1}

/* Results: a dictionary entry's field (its value is momento_result_value()),
 * or the field a get-fields item answers for. NULL with *ret_len 0 when the
 * result has none; a non-NULL pointer for an empty field. NULL-safe. */
MOMENTO_EXPORT const void *momento_result_field(const momento_result *r, size_t *ret_len);
/* A sorted-set element's score, or the score a get-score or increment-score
 * answered (0.0 otherwise). NULL-safe. */
MOMENTO_EXPORT double momento_result_score(const momento_result *r);

/* ------------------------------------------------------------ dictionary */

/* Sets `field` to `value` (creating the dictionary). Outcome SUCCESS. */
MOMENTO_EXPORT int momento_dictionary_set_field(
    momento_client *c, const char *cache, const void *name, size_t name_len, const void *field,
    size_t field_len, const void *value, size_t value_len, const momento_collection_ttl *ttl,
    const momento_request_options *opts, momento_callback cb, void *userdata);
/* Sets n fields at once. Outcome SUCCESS. */
MOMENTO_EXPORT int momento_dictionary_set_fields(
    momento_client *c, const char *cache, const void *name, size_t name_len,
    const void *const *fields, const size_t *field_lens, const void *const *values,
    const size_t *value_lens, size_t n, const momento_collection_ttl *ttl,
    const momento_request_options *opts, momento_callback cb, void *userdata);
/* Outcome HIT with the field's value, or MISS (no dictionary, or no such
 * field in it). */
MOMENTO_EXPORT int momento_dictionary_get_field(momento_client *c, const char *cache,
                                                const void *name, size_t name_len,
                                                const void *field, size_t field_len,
                                                const momento_request_options *opts,
                                                momento_callback cb, void *userdata);
/* Outcome HIT with one item per requested field, in order: a HIT with the
 * field and its value, or a MISS with the field; or MISS when there is no
 * dictionary. */
MOMENTO_EXPORT int momento_dictionary_get_fields(momento_client *c, const char *cache,
                                                 const void *name, size_t name_len,
                                                 const void *const *fields,
                                                 const size_t *field_lens, size_t n,
                                                 const momento_request_options *opts,
                                                 momento_callback cb, void *userdata);
/* Outcome HIT with every entry as an item (field and value), or MISS. */
MOMENTO_EXPORT int momento_dictionary_fetch(momento_client *c, const char *cache, const void *name,
                                            size_t name_len, const momento_request_options *opts,
                                            momento_callback cb, void *userdata);
/* Adds `amount` to the base-10 integer in `field` (a missing field counts
 * as 0). Outcome SUCCESS with the new value as momento_result_int(); a
 * field that holds no integer fails with MOMENTO_ERR_FAILED_PRECONDITION.
 * Not idempotent: never retried. */
MOMENTO_EXPORT int momento_dictionary_increment(momento_client *c, const char *cache,
                                                const void *name, size_t name_len,
                                                const void *field, size_t field_len,
                                                int64_t amount, const momento_collection_ttl *ttl,
                                                const momento_request_options *opts,
                                                momento_callback cb, void *userdata);
/* Removes fields (missing ones are ignored). Outcome SUCCESS. */
MOMENTO_EXPORT int momento_dictionary_remove_field(momento_client *c, const char *cache,
                                                   const void *name, size_t name_len,
                                                   const void *field, size_t field_len,
                                                   const momento_request_options *opts,
                                                   momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_dictionary_remove_fields(momento_client *c, const char *cache,
                                                    const void *name, size_t name_len,
                                                    const void *const *fields,
                                                    const size_t *field_lens, size_t n,
                                                    const momento_request_options *opts,
                                                    momento_callback cb, void *userdata);
/* Outcome HIT with the number of fields as momento_result_int(), or MISS. */
MOMENTO_EXPORT int momento_dictionary_length(momento_client *c, const char *cache,
                                             const void *name, size_t name_len,
                                             const momento_request_options *opts,
                                             momento_callback cb, void *userdata);

MOMENTO_EXPORT int momento_dictionary_set_field_sync(
    momento_client *c, const char *cache, const void *name, size_t name_len, const void *field,
    size_t field_len, const void *value, size_t value_len, const momento_collection_ttl *ttl,
    const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_dictionary_set_fields_sync(
    momento_client *c, const char *cache, const void *name, size_t name_len,
    const void *const *fields, const size_t *field_lens, const void *const *values,
    const size_t *value_lens, size_t n, const momento_collection_ttl *ttl,
    const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_dictionary_get_field_sync(momento_client *c, const char *cache,
                                                     const void *name, size_t name_len,
                                                     const void *field, size_t field_len,
                                                     const momento_request_options *opts,
                                                     momento_result **ret);
MOMENTO_EXPORT int momento_dictionary_get_fields_sync(momento_client *c, const char *cache,
                                                      const void *name, size_t name_len,
                                                      const void *const *fields,
                                                      const size_t *field_lens, size_t n,
                                                      const momento_request_options *opts,
                                                      momento_result **ret);
MOMENTO_EXPORT int momento_dictionary_fetch_sync(momento_client *c, const char *cache,
                                                 const void *name, size_t name_len,
                                                 const momento_request_options *opts,
                                                 momento_result **ret);
MOMENTO_EXPORT int momento_dictionary_increment_sync(
    momento_client *c, const char *cache, const void *name, size_t name_len, const void *field,
    size_t field_len, int64_t amount, const momento_collection_ttl *ttl,
    const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_dictionary_remove_field_sync(momento_client *c, const char *cache,
                                                        const void *name, size_t name_len,
                                                        const void *field, size_t field_len,
                                                        const momento_request_options *opts,
                                                        momento_result **ret);
MOMENTO_EXPORT int momento_dictionary_remove_fields_sync(momento_client *c, const char *cache,
                                                         const void *name, size_t name_len,
                                                         const void *const *fields,
                                                         const size_t *field_lens, size_t n,
                                                         const momento_request_options *opts,
                                                         momento_result **ret);
MOMENTO_EXPORT int momento_dictionary_length_sync(momento_client *c, const char *cache,
                                                  const void *name, size_t name_len,
                                                  const momento_request_options *opts,
                                                  momento_result **ret);

/* ------------------------------------------------------------------- set */

/* Adds elements (creating the set). Outcome SUCCESS. */
MOMENTO_EXPORT int momento_set_add_element(momento_client *c, const char *cache, const void *name,
                                           size_t name_len, const void *element,
                                           size_t element_len, const momento_collection_ttl *ttl,
                                           const momento_request_options *opts,
                                           momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_set_add_elements(momento_client *c, const char *cache, const void *name,
                                            size_t name_len, const void *const *elements,
                                            const size_t *element_lens, size_t n,
                                            const momento_collection_ttl *ttl,
                                            const momento_request_options *opts,
                                            momento_callback cb, void *userdata);
/* Removes elements (missing ones are ignored). Outcome SUCCESS. */
MOMENTO_EXPORT int momento_set_remove_element(momento_client *c, const char *cache,
                                              const void *name, size_t name_len,
                                              const void *element, size_t element_len,
                                              const momento_request_options *opts,
                                              momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_set_remove_elements(momento_client *c, const char *cache,
                                               const void *name, size_t name_len,
                                               const void *const *elements,
                                               const size_t *element_lens, size_t n,
                                               const momento_request_options *opts,
                                               momento_callback cb, void *userdata);
/* Outcome HIT with every element as an item (no order), or MISS. */
MOMENTO_EXPORT int momento_set_fetch(momento_client *c, const char *cache, const void *name,
                                     size_t name_len, const momento_request_options *opts,
                                     momento_callback cb, void *userdata);
/* Outcome HIT with min(limit, size) distinct elements chosen at random as
 * items (none for limit 0), or MISS. */
MOMENTO_EXPORT int momento_set_sample(momento_client *c, const char *cache, const void *name,
                                      size_t name_len, uint64_t limit,
                                      const momento_request_options *opts, momento_callback cb,
                                      void *userdata);
/* Removes and returns up to `count` (>= 1) elements chosen by the server:
 * outcome HIT with them as items, or MISS. Not idempotent: never
 * retried. */
MOMENTO_EXPORT int momento_set_pop(momento_client *c, const char *cache, const void *name,
                                   size_t name_len, uint32_t count,
                                   const momento_request_options *opts, momento_callback cb,
                                   void *userdata);
/* Outcome HIT with one answer per element, in order, as
 * momento_result_exists(r, i) (1 member, 0 not); or MISS when there is no
 * set. */
MOMENTO_EXPORT int momento_set_contains_elements(momento_client *c, const char *cache,
                                                 const void *name, size_t name_len,
                                                 const void *const *elements,
                                                 const size_t *element_lens, size_t n,
                                                 const momento_request_options *opts,
                                                 momento_callback cb, void *userdata);
/* Outcome HIT with the number of elements as momento_result_int(), or
 * MISS. */
MOMENTO_EXPORT int momento_set_length(momento_client *c, const char *cache, const void *name,
                                      size_t name_len, const momento_request_options *opts,
                                      momento_callback cb, void *userdata);

MOMENTO_EXPORT int momento_set_add_element_sync(momento_client *c, const char *cache,
                                                const void *name, size_t name_len,
                                                const void *element, size_t element_len,
                                                const momento_collection_ttl *ttl,
                                                const momento_request_options *opts,
                                                momento_result **ret);
MOMENTO_EXPORT int momento_set_add_elements_sync(momento_client *c, const char *cache,
                                                 const void *name, size_t name_len,
                                                 const void *const *elements,
                                                 const size_t *element_lens, size_t n,
                                                 const momento_collection_ttl *ttl,
                                                 const momento_request_options *opts,
                                                 momento_result **ret);
MOMENTO_EXPORT int momento_set_remove_element_sync(momento_client *c, const char *cache,
                                                   const void *name, size_t name_len,
                                                   const void *element, size_t element_len,
                                                   const momento_request_options *opts,
                                                   momento_result **ret);
MOMENTO_EXPORT int momento_set_remove_elements_sync(momento_client *c, const char *cache,
                                                    const void *name, size_t name_len,
                                                    const void *const *elements,
                                                    const size_t *element_lens, size_t n,
                                                    const momento_request_options *opts,
                                                    momento_result **ret);
MOMENTO_EXPORT int momento_set_fetch_sync(momento_client *c, const char *cache, const void *name,
                                          size_t name_len, const momento_request_options *opts,
                                          momento_result **ret);
MOMENTO_EXPORT int momento_set_sample_sync(momento_client *c, const char *cache, const void *name,
                                           size_t name_len, uint64_t limit,
                                           const momento_request_options *opts,
                                           momento_result **ret);
MOMENTO_EXPORT int momento_set_pop_sync(momento_client *c, const char *cache, const void *name,
                                        size_t name_len, uint32_t count,
                                        const momento_request_options *opts,
                                        momento_result **ret);
MOMENTO_EXPORT int momento_set_contains_elements_sync(momento_client *c, const char *cache,
                                                      const void *name, size_t name_len,
                                                      const void *const *elements,
                                                      const size_t *element_lens, size_t n,
                                                      const momento_request_options *opts,
                                                      momento_result **ret);
MOMENTO_EXPORT int momento_set_length_sync(momento_client *c, const char *cache, const void *name,
                                           size_t name_len, const momento_request_options *opts,
                                           momento_result **ret);

/* ------------------------------------------------------------------ list */

/* A slice of a list or of a sorted set's ranks, as in Python: from `start`
 * (inclusive) to `end` (exclusive); negative values count from the back;
 * MOMENTO_END as `end` means through the last element. */
#define MOMENTO_END INT32_MAX

/* Pushes one value at the front or back (creating the list); with
 * `truncate_to_size` > 0 the list is then cut to that many elements from
 * the other end. Outcome SUCCESS with the list's new length as
 * momento_result_int(). Not idempotent: never retried. */
MOMENTO_EXPORT int momento_list_push_front(momento_client *c, const char *cache, const void *name,
                                           size_t name_len, const void *value, size_t value_len,
                                           uint32_t truncate_to_size,
                                           const momento_collection_ttl *ttl,
                                           const momento_request_options *opts,
                                           momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_list_push_back(momento_client *c, const char *cache, const void *name,
                                          size_t name_len, const void *value, size_t value_len,
                                          uint32_t truncate_to_size,
                                          const momento_collection_ttl *ttl,
                                          const momento_request_options *opts,
                                          momento_callback cb, void *userdata);
/* The same with n values, which keep their order in the list. */
MOMENTO_EXPORT int momento_list_concatenate_front(
    momento_client *c, const char *cache, const void *name, size_t name_len,
    const void *const *values, const size_t *value_lens, size_t n, uint32_t truncate_to_size,
    const momento_collection_ttl *ttl, const momento_request_options *opts, momento_callback cb,
    void *userdata);
MOMENTO_EXPORT int momento_list_concatenate_back(
    momento_client *c, const char *cache, const void *name, size_t name_len,
    const void *const *values, const size_t *value_lens, size_t n, uint32_t truncate_to_size,
    const momento_collection_ttl *ttl, const momento_request_options *opts, momento_callback cb,
    void *userdata);
/* Removes and returns the first or last value: outcome HIT with it as
 * momento_result_value(), or MISS. Not idempotent: never retried.
 * Momento has no blocking pop: a MISS means the list is empty (or absent)
 * now, and a queue consumer polls (with a delay of its own choosing; a
 * topic can carry the "something was pushed" news). A pop whose reply is
 * lost (a timeout, a connection dropped after the server ran it) may have
 * removed its value: that value is gone, with no way to ask for it again;
 * an application that must not lose one reads with momento_list_fetch()
 * and removes with momento_list_remove_value() or momento_list_retain()
 * once it has handled it. */
MOMENTO_EXPORT int momento_list_pop_front(momento_client *c, const char *cache, const void *name,
                                          size_t name_len, const momento_request_options *opts,
                                          momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_list_pop_back(momento_client *c, const char *cache, const void *name,
                                         size_t name_len, const momento_request_options *opts,
                                         momento_callback cb, void *userdata);
/* Outcome HIT with the slice [start, end) as items, or MISS: no list, or a
 * slice that holds no element of it (Momento answers an empty slice of an
 * existing list with Missing - the Go SDK's test "provides no start and 0
 * as end yields no result" against the real service - and momento-local
 * does the same). So a MISS alone does not say whether the list exists:
 * momento_list_length() does. (0, MOMENTO_END) is the whole list; ends
 * beyond it are clamped.
 * MOMENTO_ERR_INVALID_ARGUMENT when the slice is empty whatever the list's
 * length (0 <= end <= start, or end <= start < 0). */
MOMENTO_EXPORT int momento_list_fetch(momento_client *c, const char *cache, const void *name,
                                      size_t name_len, int32_t start, int32_t end,
                                      const momento_request_options *opts, momento_callback cb,
                                      void *userdata);
/* Keeps only the slice [start, end) (arguments as momento_list_fetch()).
 * Outcome SUCCESS. Not idempotent: never retried. */
MOMENTO_EXPORT int momento_list_retain(momento_client *c, const char *cache, const void *name,
                                       size_t name_len, int32_t start, int32_t end,
                                       const momento_collection_ttl *ttl,
                                       const momento_request_options *opts, momento_callback cb,
                                       void *userdata);
/* Removes every element equal to `value`. Outcome SUCCESS. */
MOMENTO_EXPORT int momento_list_remove_value(momento_client *c, const char *cache, const void *name,
                                             size_t name_len, const void *value, size_t value_len,
                                             const momento_request_options *opts,
                                             momento_callback cb, void *userdata);
/* Removes elements by position: range i is the n = counts[i] elements from
 * index begin_indexes[i] (0 = the front), with every range counted in the
 * list as it was before the call - erasing {0, 1} with counts {1, 1}
 * removes the first two elements. Ranges may overlap; the parts past the
 * end, and counts of 0, erase nothing. n_ranges 0, with both arrays NULL,
 * erases the whole list. Outcome SUCCESS with the list's length afterwards
 * as momento_result_int() (0 when it was emptied: the list is then
 * deleted, and reads of it miss), or MISS when there is no list.
 * MOMENTO_ERR_INVALID_ARGUMENT when an array is NULL with n_ranges >= 1,
 * non-NULL with n_ranges 0 (so that an empty set of ranges never erases
 * everything), or when the ranges do not fit one request. The arrays are
 * copied at submit. Not idempotent: never retried. */
MOMENTO_EXPORT int momento_list_erase(momento_client *c, const char *cache, const void *name,
                                      size_t name_len, const uint32_t *begin_indexes,
                                      const uint32_t *counts, size_t n_ranges,
                                      const momento_request_options *opts, momento_callback cb,
                                      void *userdata);
/* Outcome HIT with the length as momento_result_int(), or MISS. */
MOMENTO_EXPORT int momento_list_length(momento_client *c, const char *cache, const void *name,
                                       size_t name_len, const momento_request_options *opts,
                                       momento_callback cb, void *userdata);

MOMENTO_EXPORT int momento_list_push_front_sync(momento_client *c, const char *cache,
                                                const void *name, size_t name_len,
                                                const void *value, size_t value_len,
                                                uint32_t truncate_to_size,
                                                const momento_collection_ttl *ttl,
                                                const momento_request_options *opts,
                                                momento_result **ret);
MOMENTO_EXPORT int momento_list_push_back_sync(momento_client *c, const char *cache,
                                               const void *name, size_t name_len,
                                               const void *value, size_t value_len,
                                               uint32_t truncate_to_size,
                                               const momento_collection_ttl *ttl,
                                               const momento_request_options *opts,
                                               momento_result **ret);
MOMENTO_EXPORT int momento_list_concatenate_front_sync(
    momento_client *c, const char *cache, const void *name, size_t name_len,
    const void *const *values, const size_t *value_lens, size_t n, uint32_t truncate_to_size,
    const momento_collection_ttl *ttl, const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_list_concatenate_back_sync(
    momento_client *c, const char *cache, const void *name, size_t name_len,
    const void *const *values, const size_t *value_lens, size_t n, uint32_t truncate_to_size,
    const momento_collection_ttl *ttl, const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_list_pop_front_sync(momento_client *c, const char *cache,
                                               const void *name, size_t name_len,
                                               const momento_request_options *opts,
                                               momento_result **ret);
MOMENTO_EXPORT int momento_list_pop_back_sync(momento_client *c, const char *cache,
                                              const void *name, size_t name_len,
                                              const momento_request_options *opts,
                                              momento_result **ret);
MOMENTO_EXPORT int momento_list_fetch_sync(momento_client *c, const char *cache, const void *name,
                                           size_t name_len, int32_t start, int32_t end,
                                           const momento_request_options *opts,
                                           momento_result **ret);
MOMENTO_EXPORT int momento_list_retain_sync(momento_client *c, const char *cache, const void *name,
                                            size_t name_len, int32_t start, int32_t end,
                                            const momento_collection_ttl *ttl,
                                            const momento_request_options *opts,
                                            momento_result **ret);
MOMENTO_EXPORT int momento_list_remove_value_sync(momento_client *c, const char *cache,
                                                  const void *name, size_t name_len,
                                                  const void *value, size_t value_len,
                                                  const momento_request_options *opts,
                                                  momento_result **ret);
MOMENTO_EXPORT int momento_list_erase_sync(momento_client *c, const char *cache, const void *name,
                                           size_t name_len, const uint32_t *begin_indexes,
                                           const uint32_t *counts, size_t n_ranges,
                                           const momento_request_options *opts,
                                           momento_result **ret);
MOMENTO_EXPORT int momento_list_length_sync(momento_client *c, const char *cache, const void *name,
                                            size_t name_len, const momento_request_options *opts,
                                            momento_result **ret);

/* ------------------------------------------------------------ sorted set */

typedef enum momento_order {
    MOMENTO_ASCENDING = 0,  /* lowest score first; ties by element bytes */
    MOMENTO_DESCENDING = 1
} momento_order;

/* How one end of a score range is bounded. Zero is "no bound", so a range
 * initialised by name leaves out the ends it does not name. */
typedef enum momento_bound_kind {
    MOMENTO_UNBOUNDED = 0,
    MOMENTO_INCLUSIVE = 1, /* scores equal to the bound are in range */
    MOMENTO_EXCLUSIVE = 2  /* scores equal to the bound are not */
} momento_bound_kind;
typedef struct momento_score_bound {
    double score; /* ignored when `kind` is MOMENTO_UNBOUNDED */
    momento_bound_kind kind;
} momento_score_bound;
/* A score range for momento_sorted_set_fetch_by_score_range() and
 * momento_sorted_set_length_by_score_range(), the ends as Momento's wire
 * has them. Read only during the call. For example, the scores in
 * (10, 20]:
 *
 *   MOMENTO_SCORE_RANGE(.min = {10, MOMENTO_EXCLUSIVE},
 *                       .max = {20, MOMENTO_INCLUSIVE})
 */
typedef struct momento_score_range {
    momento_score_bound min;
    momento_score_bound max;
} momento_score_range;
#define MOMENTO_SCORE_RANGE(...) (&(const momento_score_range){__VA_ARGS__})

/* Puts elements with their scores (replacing an element's score; creating
 * the sorted set). Scores must not be NaN. Outcome SUCCESS. */
MOMENTO_EXPORT int momento_sorted_set_put_element(momento_client *c, const char *cache,
                                                  const void *name, size_t name_len,
                                                  const void *value, size_t value_len,
                                                  double score, const momento_collection_ttl *ttl,
                                                  const momento_request_options *opts,
                                                  momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_sorted_set_put_elements(
    momento_client *c, const char *cache, const void *name, size_t name_len,
    const void *const *values, const size_t *value_lens, const double *scores, size_t n,
    const momento_collection_ttl *ttl, const momento_request_options *opts, momento_callback cb,
    void *userdata);
/* Outcome HIT with the elements of ranks [start, end) in `order` as items
 * (value and score), or MISS when there is no sorted set. Slices as
 * momento_list_fetch(), except that a slice holding no element of an
 * existing sorted set (start past the end) is a HIT with no items, not a
 * MISS. */
MOMENTO_EXPORT int momento_sorted_set_fetch_by_rank(momento_client *c, const char *cache,
                                                    const void *name, size_t name_len,
                                                    int32_t start, int32_t end,
                                                    momento_order order,
                                                    const momento_request_options *opts,
                                                    momento_callback cb, void *userdata);
/* Outcome HIT with the elements scored in [min, max] (-INFINITY / INFINITY
 * for no bound) in `order`, skipping `offset` of them and returning at
 * most `count` (0 = all), as items - no items when none is in range or
 * `offset` skips them all; or MISS when there is no sorted set. min > max
 * or a NaN is MOMENTO_ERR_INVALID_ARGUMENT. */
MOMENTO_EXPORT int momento_sorted_set_fetch_by_score(momento_client *c, const char *cache,
                                                     const void *name, size_t name_len,
                                                     double min, double max, momento_order order,
                                                     uint32_t offset, uint32_t count,
                                                     const momento_request_options *opts,
                                                     momento_callback cb, void *userdata);
/* As momento_sorted_set_fetch_by_score(), with each end of the range
 * inclusive, exclusive or open as `range` says (NULL: the whole set). A
 * NaN bound, a bound kind outside the enum, or min above max is
 * MOMENTO_ERR_INVALID_ARGUMENT; equal bounds with an exclusive end are an
 * empty range (a HIT with no items). */
MOMENTO_EXPORT int momento_sorted_set_fetch_by_score_range(
    momento_client *c, const char *cache, const void *name, size_t name_len,
    const momento_score_range *range, momento_order order, uint32_t offset, uint32_t count,
    const momento_request_options *opts, momento_callback cb, void *userdata);
/* Outcome HIT with the element's score as momento_result_score(), or MISS
 * (no sorted set, or no such element). */
MOMENTO_EXPORT int momento_sorted_set_get_score(momento_client *c, const char *cache,
                                                const void *name, size_t name_len,
                                                const void *value, size_t value_len,
                                                const momento_request_options *opts,
                                                momento_callback cb, void *userdata);
/* Outcome HIT with one item per value, in order: a HIT with its score, or
 * a MISS; or MISS when there is no sorted set. */
MOMENTO_EXPORT int momento_sorted_set_get_scores(momento_client *c, const char *cache,
                                                 const void *name, size_t name_len,
                                                 const void *const *values,
                                                 const size_t *value_lens, size_t n,
                                                 const momento_request_options *opts,
                                                 momento_callback cb, void *userdata);
/* Outcome HIT with the element's 0-based rank in `order` as
 * momento_result_int(), or MISS (no sorted set, or no such element). */
MOMENTO_EXPORT int momento_sorted_set_get_rank(momento_client *c, const char *cache,
                                               const void *name, size_t name_len,
                                               const void *value, size_t value_len,
                                               momento_order order,
                                               const momento_request_options *opts,
                                               momento_callback cb, void *userdata);
/* Adds `amount` (not NaN) to the element's score (a missing element counts
 * as 0). Outcome SUCCESS with the new score as momento_result_score(). Not
 * idempotent: never retried. */
MOMENTO_EXPORT int momento_sorted_set_increment_score(
    momento_client *c, const char *cache, const void *name, size_t name_len, const void *value,
    size_t value_len, double amount, const momento_collection_ttl *ttl,
    const momento_request_options *opts, momento_callback cb, void *userdata);
/* Removes elements (missing ones are ignored). Outcome SUCCESS. */
MOMENTO_EXPORT int momento_sorted_set_remove_element(momento_client *c, const char *cache,
                                                     const void *name, size_t name_len,
                                                     const void *value, size_t value_len,
                                                     const momento_request_options *opts,
                                                     momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_sorted_set_remove_elements(momento_client *c, const char *cache,
                                                      const void *name, size_t name_len,
                                                      const void *const *values,
                                                      const size_t *value_lens, size_t n,
                                                      const momento_request_options *opts,
                                                      momento_callback cb, void *userdata);
/* Outcome HIT with the number of elements as momento_result_int(), or
 * MISS. */
MOMENTO_EXPORT int momento_sorted_set_length(momento_client *c, const char *cache,
                                             const void *name, size_t name_len,
                                             const momento_request_options *opts,
                                             momento_callback cb, void *userdata);
/* Outcome HIT with the number of elements scored in [min, max] (bounds as
 * momento_sorted_set_fetch_by_score()) as momento_result_int(), or MISS. */
MOMENTO_EXPORT int momento_sorted_set_length_by_score(momento_client *c, const char *cache,
                                                      const void *name, size_t name_len,
                                                      double min, double max,
                                                      const momento_request_options *opts,
                                                      momento_callback cb, void *userdata);
/* As momento_sorted_set_length_by_score(), the range as
 * momento_sorted_set_fetch_by_score_range() takes it. */
MOMENTO_EXPORT int momento_sorted_set_length_by_score_range(
    momento_client *c, const char *cache, const void *name, size_t name_len,
    const momento_score_range *range, const momento_request_options *opts, momento_callback cb,
    void *userdata);

/* One source of momento_sorted_set_union_store(): a sorted set's name and
 * the weight its scores are multiplied by (zero and negative allowed;
 * Momento's wire type is a float). */
typedef struct momento_sorted_set_source {
    const void *name;
    size_t name_len;
    float weight;
} momento_sorted_set_source;
/* How a union combines the weighted scores of an element in several sets. */
typedef enum momento_aggregate {
    MOMENTO_AGGREGATE_SUM = 0,
    MOMENTO_AGGREGATE_MIN = 1,
    MOMENTO_AGGREGATE_MAX = 2
} momento_aggregate;
#define MOMENTO_MAX_UNION_SOURCES 100
/* Stores into `dest` the union of the `n` sources (1 ..
 * MOMENTO_MAX_UNION_SOURCES; a missing one counts as empty), each score
 * times its source's weight, an element in several combined by `agg`,
 * replacing what `dest` held; `dest` gets `ttl_ms` (0 = the client's
 * default TTL). The JS and Rust SDKs' sortedSetUnionStore. Outcome SUCCESS
 * with the stored set's length as momento_result_int() (0: `dest` was
 * removed, no source having an element). Refused as a collection write,
 * and for NULL `sources`, n 0 or over the maximum, a source's name that
 * is not a collection name, a weight that is NaN or infinite, or `agg` not
 * a momento_aggregate. Not idempotent: never retried. */
MOMENTO_EXPORT int momento_sorted_set_union_store(momento_client *c, const char *cache,
                                                  const void *dest, size_t dest_len,
                                                  const momento_sorted_set_source *sources,
                                                  size_t n, momento_aggregate agg, uint64_t ttl_ms,
                                                  const momento_request_options *opts,
                                                  momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_sorted_set_union_store_sync(
    momento_client *c, const char *cache, const void *dest, size_t dest_len,
    const momento_sorted_set_source *sources, size_t n, momento_aggregate agg, uint64_t ttl_ms,
    const momento_request_options *opts, momento_result **ret);

MOMENTO_EXPORT int momento_sorted_set_put_element_sync(
    momento_client *c, const char *cache, const void *name, size_t name_len, const void *value,
    size_t value_len, double score, const momento_collection_ttl *ttl,
    const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_put_elements_sync(
    momento_client *c, const char *cache, const void *name, size_t name_len,
    const void *const *values, const size_t *value_lens, const double *scores, size_t n,
    const momento_collection_ttl *ttl, const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_fetch_by_rank_sync(momento_client *c, const char *cache,
                                                         const void *name, size_t name_len,
                                                         int32_t start, int32_t end,
                                                         momento_order order,
                                                         const momento_request_options *opts,
                                                         momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_fetch_by_score_sync(
    momento_client *c, const char *cache, const void *name, size_t name_len, double min,
    double max, momento_order order, uint32_t offset, uint32_t count,
    const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_fetch_by_score_range_sync(
    momento_client *c, const char *cache, const void *name, size_t name_len,
    const momento_score_range *range, momento_order order, uint32_t offset, uint32_t count,
    const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_get_score_sync(momento_client *c, const char *cache,
                                                     const void *name, size_t name_len,
                                                     const void *value, size_t value_len,
                                                     const momento_request_options *opts,
                                                     momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_get_scores_sync(momento_client *c, const char *cache,
                                                      const void *name, size_t name_len,
                                                      const void *const *values,
                                                      const size_t *value_lens, size_t n,
                                                      const momento_request_options *opts,
                                                      momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_get_rank_sync(momento_client *c, const char *cache,
                                                    const void *name, size_t name_len,
                                                    const void *value, size_t value_len,
                                                    momento_order order,
                                                    const momento_request_options *opts,
                                                    momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_increment_score_sync(
    momento_client *c, const char *cache, const void *name, size_t name_len, const void *value,
    size_t value_len, double amount, const momento_collection_ttl *ttl,
    const momento_request_options *opts, momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_remove_element_sync(momento_client *c, const char *cache,
                                                          const void *name, size_t name_len,
                                                          const void *value, size_t value_len,
                                                          const momento_request_options *opts,
                                                          momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_remove_elements_sync(momento_client *c, const char *cache,
                                                           const void *name, size_t name_len,
                                                           const void *const *values,
                                                           const size_t *value_lens, size_t n,
                                                           const momento_request_options *opts,
                                                           momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_length_sync(momento_client *c, const char *cache,
                                                  const void *name, size_t name_len,
                                                  const momento_request_options *opts,
                                                  momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_length_by_score_sync(momento_client *c, const char *cache,
                                                           const void *name, size_t name_len,
                                                           double min, double max,
                                                           const momento_request_options *opts,
                                                           momento_result **ret);
MOMENTO_EXPORT int momento_sorted_set_length_by_score_range_sync(
    momento_client *c, const char *cache, const void *name, size_t name_len,
    const momento_score_range *range, const momento_request_options *opts, momento_result **ret);

#ifdef __cplusplus
}
#endif

#endif
