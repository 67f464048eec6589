/* The raw key/value senders and the decoders of their replies (kv_send.c):
 * below the batcher and the coalescer, which send through them, and the
 * key/value operations, which reach them through the batcher. */
#ifndef MOMENTO_KV_SEND_H
#define MOMENTO_KV_SEND_H

#include "codec/unpack.h"
#include "engine/call.h"

#include <protobuf-c/protobuf-c.h>

/* A borrowed byte string for a request message (packed before the call
 * returns, so nothing is copied). */
static inline ProtobufCBinaryData momento__bytes(const void *p, size_t n)
{
    ProtobufCBinaryData b = {n, (uint8_t *)p};
    return b;
}

/* Get, set and delete as they stand, with resolved options: the caller has
 * checked the arguments, and they go to the wire whatever the batcher
 * would do (momento__batcher_get and friends, batcher.h, offer them to it
 * first). Return as momento_get() and friends. */
int momento__send_get(momento_client *c, const char *cache, const void *key, size_t key_len,
                      const momento__call_opts *opts, momento_callback cb, void *userdata);
int momento__send_set(momento_client *c, const char *cache, const void *key, size_t key_len,
                      const void *value, size_t value_len, uint64_t ttl_ms,
                      const momento__call_opts *opts, momento_callback cb, void *userdata);
int momento__send_delete(momento_client *c, const char *cache, const void *key, size_t key_len,
                         const momento__call_opts *opts, momento_callback cb, void *userdata);

/* One key of a batch (and a set's value and TTL, sent as they are), as
 * its source hands it over. */
typedef struct momento__batch_item {
    const void *key;
    size_t key_len;
    const void *value;
    size_t value_len;
    uint64_t ttl_ms;
} momento__batch_item;

/* Sends `n` gets (`set` false) or sets as one GetBatch or SetBatch, item i
 * as at(src, i) gives it: momento_get_batch() and momento_set_batch() from
 * their arrays, the batcher from its queued members. The reply must hold
 * one message per key, in order (a misbehaving server could send any
 * number): the call ends BAD_RESPONSE otherwise. Returns as
 * momento__call_start_with(), or MOMENTO_ERR_NO_MEMORY. */
int momento__send_batch(momento_client *c, bool set, const char *cache, size_t n,
                        void (*at)(const void *src, size_t i, momento__batch_item *out),
                        const void *src, const momento__call_opts *opts, momento_callback cb,
                        void *userdata);

/* The decoders of those replies and of GetBatch / SetBatch (each a result
 * of items, one per key, in order), which the batcher sends too. */
MOMENTO__DECODER(get);
MOMENTO__DECODER(set);
MOMENTO__DECODER(delete);
MOMENTO__DECODER(get_batch);
MOMENTO__DECODER(set_batch);

#endif
