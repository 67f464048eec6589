/* Turning replies into results: each RPC's decoder, named by the RPC table
 * (common/methods.def) as momento__decode_<fn> and defined in the op file of
 * its family. */
#ifndef MOMENTO_DECODE_H
#define MOMENTO_DECODE_H

#include "methods.h"
#include "result.h"

#include <grpc/slice.h>

/* What a decoder leaves to free once the callback has run. */
typedef struct momento__scratch {
    ProtobufCMessage *msg;    /* a unary response */
    ProtobufCMessage **msgs;  /* a stream's responses (array allocated) */
    size_t n_msgs;
    void *mem;                /* one more block (arrays the result points into) */
    /* Reads' decompression (compress.c): the call sets the limit before
     * decoding (0: values are returned as stored); decompressed values are
     * chained here. The limit bounds each value and, counted down in
     * `decompressed_bytes`, the sum of one reply's (a get batch, the
     * batcher's GetBatch): no reply may make the client inflate more. */
    size_t decompress_max;
    size_t decompressed_bytes;
    void *decompressed;
    /* A decoder's own explanation of the error it returns (static), which
     * the result's message then is; NULL: the usual one. */
    const char *message;
} momento__scratch;

void momento__scratch_free(momento__scratch *s);

/* Fills `r` from the response message(s): one for unary RPCs, any number
 * (in order) for streaming ones. Returns MOMENTO_OK or an error; on error
 * the caller clears whatever `r` was given. */
typedef int (*momento__decode_fn)(momento_result *r, const grpc_slice *msgs, size_t n_msgs,
                                  momento__scratch *scratch);

#define MOMENTO__DECODER(fn)                                                                       \
    int momento__decode_##fn(momento_result *r, const grpc_slice *msgs, size_t n_msgs,            \
                             momento__scratch *scratch)

#define MOMENTO_RPC(ID, fn, ...) MOMENTO__DECODER(fn);
#define MOMENTO_RPC_SERVER_ONLY(ID, fn, ...)
#include "methods.def"
#undef MOMENTO_RPC
#undef MOMENTO_RPC_SERVER_ONLY

/* Indexed by momento__rpc_id; NULL for RPCs the library never makes (the
 * table's `server_only` rows). Constant; any thread. */
extern const momento__decode_fn momento__decoders[MOMENTO__RPC_COUNT];

/* Unpacks `msg` as a response message of RPC `m` (the table's descriptor)
 * and leaves it in `scratch` to be freed after the callback. NULL when it
 * does not decode. */
void *momento__unpack_reply(momento__rpc_id m, const grpc_slice *msg, momento__scratch *scratch);

/* For replies that carry nothing beyond being well-formed (set, delete,
 * ping, most control calls): checks that without allocating. */
int momento__decode_empty(momento_result *r, const grpc_slice *msg, momento_outcome outcome);

#endif
