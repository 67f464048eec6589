/* What the ops ask of the coalescer (coalescer.c) beyond its public API
 * (momento/coalescer.h): the collection reads it shares. */
#ifndef MOMENTO_COALESCER_PRIVATE_H
#define MOMENTO_COALESCER_PRIVATE_H

#include "codec/unpack.h"
#include "methods.h"
#include "momento/coalescer.h"

#include <protobuf-c/protobuf-c.h>

/* A collection read of `name` through coalescer `co`, checked by the
 * caller: joins an identical read in flight (same RPC, same packed request)
 * or sends `req` as a new shared RPC, decoded by `decode`. Returns as the
 * public calls. */
int momento__coalesce_read(momento_coalescer *co, momento__rpc_id rpc, momento__decode_fn decode,
                           const char *cache, const void *name, size_t name_len,
                           const ProtobufCMessage *req, const momento_request_options *opts,
                           momento_callback cb, void *userdata);
/* The client a coalescer sends through (NULL for NULL). */
momento_client *momento__coalescer_client(const momento_coalescer *co);

#endif
