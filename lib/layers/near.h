/* The near cache (near.c; momento_config_set_near_cache(), docs/near-cache.md):
 * gets answered inside the process within a staleness bound. The get and
 * set operations pass through it when the client has one; it hears of
 * every write submitted through the client as a write observer.
 *
 * Lock order: its lock after the client's observer lock (its observer
 * runs under that); it holds it while a near answer is accepted (the
 * client's lock and the gate's come after it). */
#ifndef MOMENTO_NEAR_H
#define MOMENTO_NEAR_H

#include "momento/momento.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct momento__near momento__near;

/* `c`'s near cache, made on first use; NULL when the client has none (or
 * there was no memory to make it: requests then go to Momento). NULL-safe. */
momento__near *momento__near_of(momento_client *c);

/* `c`'s near cache if one has been made, else NULL (never makes one:
 * nothing is held before then). NULL-safe. */
momento__near *momento__near_made(momento_client *c);

/* Another client's write of (cache, key), heard on the invalidation topic
 * (near_sync.c): its entry is dropped, and a read of it sent before keeps
 * nothing. NULL-safe on `n`. */
void momento__near_invalidate(momento__near *n, const char *cache, size_t cache_len,
                              const void *key, size_t key_len);
/* Every entry dropped, and no read or set sent before keeps its answer:
 * invalidations may have been missed (the topic's stream connected, broke
 * or skipped items). NULL-safe. */
void momento__near_reset(momento__near *n);
/* A snapshot of `n`'s counters (all 0 for NULL); near_sync.c adds its own. */
void momento__near_stats(momento__near *n, momento_near_cache_stats *out);

/* The near cache a checked get of `c` with `opts` (NULL: none) goes
 * through, or NULL: the client has none, or the request bypasses it
 * (momento_request_options.no_near_cache, counted), or it is a consistent
 * read, which must see Momento's current value (not counted). `count`:
 * count a bypass (false for a look the request's own call repeats). */
momento__near *momento__near_for_get(momento_client *c, const momento_request_options *opts,
                                     bool count);

/* How a get reaches Momento when the near cache cannot answer: the
 * operation's own path (`target`: the client, or a coalescer). */
typedef int (*momento__near_send)(void *target, const char *cache, const void *key,
                                  size_t key_len, const momento_request_options *opts,
                                  momento_callback cb, void *userdata);

/* A get through `n` (arguments checked): answered from memory when a
 * fresh entry has the key (momento__answer_soon), else sent with `send`
 * and - with `keep` - its answer kept (`send` keeps it itself otherwise:
 * the coalescer, once per RPC). A blocking call's callback
 * (momento__blocking_done) is never wrapped: its answer is kept by
 * momento__near_keep(). Returns as `send` does. */
int momento__near_get(momento__near *n, momento_client *c, void *target, momento__near_send send,
                      bool keep, const char *cache, const void *key, size_t key_len,
                      const momento_request_options *opts, momento_callback cb, void *userdata);

/* A blocking get answered from memory on the calling thread: no callback
 * runs, so nothing of the application's runs inside the call, and the
 * answer costs no crossing to the completion thread and back. Returns true
 * with *ret (the caller's to free) when a fresh entry has the key; false
 * when the get must be made the common way - none has it, there is no
 * memory for the result, or the client has a metrics hook or the request
 * a group (both promised their accounting on the library's threads). The
 * caller checked the arguments and made sure it is not the completion
 * thread (momento__blocking_begin). */
bool momento__near_get_here(momento__near *n, momento_client *c, const char *cache,
                            const void *key, size_t key_len, const momento_request_options *opts,
                            momento_result **ret);

/* Before a blocking get is sent: what momento__near_keep() needs. */
typedef struct momento__near_read {
    int64_t sent_ns;
    uint64_t gen;
} momento__near_read;
momento__near_read momento__near_begin(momento__near *n, const char *cache, const void *key,
                                       size_t key_len);
/* A blocking get's result `r` (NULL-safe), read as `rd` said: kept when
 * it came from Momento (not from memory) within the bound, no write of
 * the key submitted meanwhile. */
void momento__near_keep(momento__near *n, momento__near_read rd, const char *cache,
                        const void *key, size_t key_len, const momento_result *r);

/* Before a blocking set is sent, and after it succeeded: its value kept
 * as an asynchronous set's is (momento__near_set), unless too large. */
momento__near_read momento__near_write_begin(momento__near *n, const char *cache,
                                             const void *key, size_t key_len);
void momento__near_keep_write(momento__near *n, momento__near_read rd, const char *cache,
                              const void *key, size_t key_len, const void *value,
                              size_t value_len, uint64_t ttl_in_effect_ms);

/* How a set reaches Momento. */
typedef int (*momento__near_send_set)(void *target, const char *cache, const void *key,
                                      size_t key_len, const void *value, size_t value_len,
                                      uint64_t ttl_ms, const momento_request_options *opts,
                                      momento_callback cb, void *userdata);
/* A set through `n`: sent with `send` (the write itself drops the key's
 * entry: the observer); if it succeeds with no other write of the key
 * submitted meanwhile, its value is kept, its age counted from the send,
 * never past `ttl_ms` (the one in effect) - unless `cb` is a blocking
 * call's. Returns as `send` does. */
int momento__near_set(momento__near *n, momento_client *c, void *target,
                      momento__near_send_set send, const char *cache, const void *key,
                      size_t key_len, const void *value, size_t value_len, uint64_t ttl_ms,
                      uint64_t ttl_in_effect_ms, const momento_request_options *opts,
                      momento_callback cb, void *userdata);

#endif
