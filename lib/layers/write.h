/* The one path of a scalar write (write.c). Every write that carries a
 * value - momento_set(), momento_set_if() and its named forms,
 * momento_set_with_hash(), momento_set_batch(), and the coalescer's sets,
 * whether they join an RPC, lead one or go alone - is prepared here exactly
 * once: its value compressed as the request asks, its arguments checked
 * against what is sent, its TTL made effective, and the client's other
 * coalescers told of the write (momento__client_note_write). What is
 * prepared is then sent by the unchecked senders (kv_send.h; the set_if
 * forms' own in op_conditional.c), which neither compress nor check again,
 * so a value can never be compressed twice. */
#ifndef MOMENTO_WRITE_H
#define MOMENTO_WRITE_H

#include "engine/client.h"
#include "momento/momento.h"

#include <stddef.h>
#include <stdint.h>

/* One prepared write: what to send. */
typedef struct momento__write {
    const void *value;   /* the caller's bytes, or `owned` */
    size_t value_len;
    uint64_t ttl_ms;     /* effective: 0 is replaced by the client's default */
    void *owned;         /* the compressed copy, or NULL */
} momento__write;

/* Prepares a write of `value` to (cache, key), as momento_set() takes its
 * arguments. `self` is the observer of the coalescer the write goes
 * through (it orders the key itself), NULL for any other: every other
 * write observer of `c` (its coalescers) closes the key's open reads, so
 * a read submitted after this call observes the write (read-your-writes).
 * Returns MOMENTO_OK with *w to send, then released by
 * momento__write_end(); or MOMENTO_ERR_INVALID_ARGUMENT (the refusal says
 * why) or MOMENTO_ERR_NO_MEMORY, with nothing to release and no coalescer
 * told. Any thread. */
int momento__write_begin(momento__write *w, momento_client *c, const momento__write_observer *self,
                         const char *cache, const void *key, size_t key_len, const void *value,
                         size_t value_len, uint64_t ttl_ms, const momento_request_options *opts,
                         momento_callback cb);

/* Releases what momento__write_begin() made, once the request is packed or
 * copied (at submit). NULL-safe on a zeroed write. */
void momento__write_end(momento__write *w);

/* A set batch: `n` writes of one cache with one TTL, prepared as one
 * (momento_set_batch()'s checks: the whole request's size included). */
typedef struct momento__writes {
    const void *const *values;
    const size_t *value_lens;
    uint64_t ttl_ms;
    void *owned;
} momento__writes;

int momento__writes_begin(momento__writes *w, momento_client *c, const char *cache,
                          const void *const *keys, const size_t *key_lens,
                          const void *const *values, const size_t *value_lens, size_t n,
                          uint64_t ttl_ms, const momento_request_options *opts,
                          momento_callback cb);
void momento__writes_end(momento__writes *w);

#endif
