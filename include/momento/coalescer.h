/*
 * Request coalescing: duplicate requests in flight share one RPC.
 *
 * A get of (cache, key) issued while an identical get is in flight attaches
 * to it instead of sending another RPC; so does a set with the same key,
 * value bytes and TTL, and a delete of the same key. Every caller still gets
 * its own callback, with the shared result. The calls mirror the plain
 * client's (same arguments, callbacks and results), so an application
 * switches by changing one name: momento_get -> momento_coalescing_get.
 *
 * Guarantees (docs/coalescing.md has the full statement):
 * - Only identical requests merge. A set of key K with a different value or
 *   TTL than the one in flight is sent as its own RPC.
 * - A set or delete of K issued through the coalescer closes K's in-flight
 *   get to newcomers: a get issued after the write returns starts a new RPC,
 *   so it observes that write (read-your-writes). A set likewise joins an
 *   identical set only if no other write of K was issued after it.
 * - Every accepted request gets exactly one callback, also on error,
 *   timeout, cancellation and client shutdown. A request refused at submit
 *   (non-zero return) never calls back.
 * - Each request keeps its own deadline and cancel token (the
 *   momento_request_options it was submitted with), whether it issued the
 *   RPC or joined it: it is called back no later than its own deadline, a
 *   cancel of its token calls back only it, and it never fails of another
 *   request's deadline or cancel (it is issued again instead). When every
 *   request waiting on an RPC has left, the RPC is cancelled on the wire.
 * - The in-flight entry leaves the table before callbacks run, so a callback
 *   that asks for the same key starts a fresh RPC.
 *
 * Threads: submission is safe from any thread; callbacks run on the client's
 * completion thread and no coalescer lock is held while they run.
 */
#ifndef MOMENTO_COALESCER_H
#define MOMENTO_COALESCER_H

#include "momento/momento.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct momento_coalescer momento_coalescer;

/*
 * A coalescer over `client`, which it borrows: the client must outlive the
 * coalescer's last callback (free the coalescer, then the client: the
 * client's free waits for those callbacks. Freeing the client first is also
 * fine and calls every waiter back with MOMENTO_ERR_CANCELLED; after that the
 * coalescer may only be freed). Returns 0, MOMENTO_ERR_INVALID_ARGUMENT
 * (`ret` or `client` NULL) or MOMENTO_ERR_NO_MEMORY.
 */
MOMENTO_EXPORT int momento_coalescer_new(momento_coalescer **ret, momento_client *client);

/*
 * Frees the coalescer without waiting: returns at once. Requests already
 * accepted still get their callbacks (every waiter, with the shared result);
 * the coalescer is released after the last of them, or at once when none is
 * in flight. The handle must not be used after this call: submitting through
 * it is a use after free, as it may already be gone. NULL-safe. May be called
 * from a callback, including one of its own.
 *
 * Compare momento_client_free() (momento.h), which waits for every callback.
 */
MOMENTO_EXPORT void momento_coalescer_free(momento_coalescer *co);

/*
 * As momento_get / momento_set / momento_delete, coalesced, with the same
 * argument checks and return codes (momento.h, "Data plane, async"):
 * MOMENTO_ERR_INVALID_ARGUMENT also for a NULL `co`; MOMENTO_ERR_NO_MEMORY
 * also when the coalescer's own bookkeeping cannot be allocated. A request
 * that joins an RPC in flight sends nothing itself: it is accepted even while
 * the client is being freed, and gets that RPC's result.
 * MOMENTO_ERR_CANCELLED when `opts` carries a token already cancelled.
 */
MOMENTO_EXPORT int momento_coalescing_get(momento_coalescer *co, const char *cache, const void *key,
                                          size_t key_len, const momento_request_options *opts,
                                          momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_set(momento_coalescer *co, const char *cache, const void *key,
                                          size_t key_len, const void *value, size_t value_len,
                                          uint64_t ttl_ms, const momento_request_options *opts,
                                          momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_delete(momento_coalescer *co, const char *cache,
                                             const void *key, size_t key_len,
                                             const momento_request_options *opts,
                                             momento_callback cb, void *userdata);

/* Blocking variants, with the contract of momento_get_sync() and friends:
 * MOMENTO_ERR_WOULD_DEADLOCK on the completion thread of the coalescer's
 * client; MOMENTO_ERR_INVALID_ARGUMENT (and *ret NULL) for a NULL `co`. */
MOMENTO_EXPORT int momento_coalescing_get_sync(momento_coalescer *co, const char *cache,
                                               const void *key, size_t key_len,
                                               const momento_request_options *opts,
                                               momento_result **ret);
MOMENTO_EXPORT int momento_coalescing_set_sync(momento_coalescer *co, const char *cache,
                                               const void *key, size_t key_len, const void *value,
                                               size_t value_len, uint64_t ttl_ms,
                                               const momento_request_options *opts,
                                               momento_result **ret);
MOMENTO_EXPORT int momento_coalescing_delete_sync(momento_coalescer *co, const char *cache,
                                                  const void *key, size_t key_len,
                                                  const momento_request_options *opts,
                                                  momento_result **ret);

/*
 * Collection reads, coalesced (collections.h for the arguments and results;
 * the same return codes as above). Identical reads in flight - the same
 * operation on the same cache and collection with the same arguments -
 * share one RPC. Every write of that collection's key submitted through the
 * coalescer's client or the coalescer (scalar or collection, async or
 * blocking) closes the key's reads in flight to newcomers: a read issued
 * after the write was submitted observes it (read-your-writes). Writes
 * through another client are not seen, as with gets.
 */
MOMENTO_EXPORT int momento_coalescing_dictionary_get_field(
    momento_coalescer *co, const char *cache, const void *name, size_t name_len, const void *field,
    size_t field_len, const momento_request_options *opts, momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_dictionary_get_fields(
    momento_coalescer *co, const char *cache, const void *name, size_t name_len,
    const void *const *fields, const size_t *field_lens, size_t n,
    const momento_request_options *opts, momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_dictionary_fetch(momento_coalescer *co, const char *cache,
                                                       const void *name, size_t name_len,
                                                       const momento_request_options *opts,
                                                       momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_dictionary_length(momento_coalescer *co, const char *cache,
                                                        const void *name, size_t name_len,
                                                        const momento_request_options *opts,
                                                        momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_set_fetch(momento_coalescer *co, const char *cache,
                                                const void *name, size_t name_len,
                                                const momento_request_options *opts,
                                                momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_set_contains_elements(
    momento_coalescer *co, const char *cache, const void *name, size_t name_len,
    const void *const *elements, const size_t *element_lens, size_t n,
    const momento_request_options *opts, momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_set_length(momento_coalescer *co, const char *cache,
                                                 const void *name, size_t name_len,
                                                 const momento_request_options *opts,
                                                 momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_list_fetch(momento_coalescer *co, const char *cache,
                                                 const void *name, size_t name_len, int32_t start,
                                                 int32_t end, const momento_request_options *opts,
                                                 momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_list_length(momento_coalescer *co, const char *cache,
                                                  const void *name, size_t name_len,
                                                  const momento_request_options *opts,
                                                  momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_sorted_set_fetch_by_rank(
    momento_coalescer *co, const char *cache, const void *name, size_t name_len, int32_t start,
    int32_t end, momento_order order, const momento_request_options *opts, momento_callback cb,
    void *userdata);
MOMENTO_EXPORT int momento_coalescing_sorted_set_fetch_by_score(
    momento_coalescer *co, const char *cache, const void *name, size_t name_len, double min,
    double max, momento_order order, uint32_t offset, uint32_t count,
    const momento_request_options *opts, momento_callback cb, void *userdata);
/* Coalesces with a momento_coalescing_sorted_set_fetch_by_score() of the
 * same inclusive range: both send the same request. */
MOMENTO_EXPORT int momento_coalescing_sorted_set_fetch_by_score_range(
    momento_coalescer *co, const char *cache, const void *name, size_t name_len,
    const momento_score_range *range, momento_order order, uint32_t offset, uint32_t count,
    const momento_request_options *opts, momento_callback cb, void *userdata);
/* A get of one score is sent as a get of scores with n = 1 (as
 * momento_sorted_set_get_score() is): it shares an RPC with an identical
 * momento_coalescing_sorted_set_get_scores() of that one value, and each
 * gets the result in its own call's shape. */
MOMENTO_EXPORT int momento_coalescing_sorted_set_get_score(
    momento_coalescer *co, const char *cache, const void *name, size_t name_len, const void *value,
    size_t value_len, const momento_request_options *opts, momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_sorted_set_get_scores(
    momento_coalescer *co, const char *cache, const void *name, size_t name_len,
    const void *const *values, const size_t *value_lens, size_t n,
    const momento_request_options *opts, momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_sorted_set_get_rank(
    momento_coalescer *co, const char *cache, const void *name, size_t name_len, const void *value,
    size_t value_len, momento_order order, const momento_request_options *opts,
    momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_sorted_set_length(momento_coalescer *co, const char *cache,
                                                        const void *name, size_t name_len,
                                                        const momento_request_options *opts,
                                                        momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_sorted_set_length_by_score(
    momento_coalescer *co, const char *cache, const void *name, size_t name_len, double min,
    double max, const momento_request_options *opts, momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_coalescing_sorted_set_length_by_score_range(
    momento_coalescer *co, const char *cache, const void *name, size_t name_len,
    const momento_score_range *range, const momento_request_options *opts, momento_callback cb,
    void *userdata);

/*
 * Counters since creation. Fields are only ever appended: pass
 * sizeof(momento_coalescer_stats) so a program built against an older header
 * keeps working.
 */
typedef struct momento_coalescer_stats {
    uint64_t get_requests;      /* accepted coalescing gets */
    uint64_t get_coalesced;     /* ...of which joined an RPC in flight */
    uint64_t set_requests;
    uint64_t set_coalesced;
    uint64_t delete_requests;
    uint64_t delete_coalesced;
    uint64_t peak_waiters;      /* most callers ever attached to one RPC */
    uint64_t keys_in_flight;    /* RPCs in flight now */
    /* Appended with per-request options (docs/coalescing.md, "Deadlines and
     * cancellation"): */
    uint64_t waiters_left;      /* waiters called back at their own deadline or
                                 * cancel, before their shared RPC ended */
    uint64_t rpcs_abandoned;    /* RPCs cancelled on the wire: their last waiter left */
    uint64_t reissued;          /* waiters issued again: their RPC hit the deadline
                                 * of the waiter that issued it, not theirs */
    /* Appended with collections (docs/coalescing.md, "Collections"): */
    uint64_t read_requests;     /* accepted coalescing collection reads */
    uint64_t read_coalesced;    /* ...of which joined an identical read in flight */
} momento_coalescer_stats;

/* The coalescer's counters: fills *ret (at most `size` bytes of it). Returns
 * 0, or MOMENTO_ERR_INVALID_ARGUMENT when `co` or `ret` is NULL. */
MOMENTO_EXPORT int momento_coalescer_stats_get(const momento_coalescer *co,
                                               momento_coalescer_stats *ret, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* MOMENTO_COALESCER_H */
