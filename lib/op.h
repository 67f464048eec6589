/* What the operation files (op_*.c, one per RPC family) share, and the
 * senders the coalescer calls after validating once for both. */
#ifndef MOMENTO_OP_H
#define MOMENTO_OP_H

#include "blocking.h"
#include "call.h"
#include "client.h"
#include "compress.h"
#include "decode.h"
#include "validate.h"

#include <protobuf-c/protobuf-c.h>

/* A borrowed byte string for a request message (packed before the call
 * returns, so nothing is copied). */
static inline ProtobufCBinaryData momento__bytes(const void *p, size_t n)
{
    ProtobufCBinaryData b = {n, (uint8_t *)p};
    return b;
}

/* Get, set and delete without their argument checks (op_kv.c), with
 * resolved options: the caller has checked the arguments. Return as
 * momento_get() and friends. */
int momento__send_get(momento_client *c, const char *cache, const void *key, size_t key_len,
                      const momento__call_opts *opts, momento_callback cb, void *userdata);
int momento__send_set(momento_client *c, const char *cache, const void *key, size_t key_len,
                      const void *value, size_t value_len, uint64_t ttl_ms,
                      const momento__call_opts *opts, momento_callback cb, void *userdata);
int momento__send_delete(momento_client *c, const char *cache, const void *key, size_t key_len,
                         const momento__call_opts *opts, momento_callback cb, void *userdata);

#endif
