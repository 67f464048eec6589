/* What every decoder shares (unpack.c): the scratch memory a decoded result
 * points into until its callback has returned, unpacking a reply by the RPC
 * table's descriptor, and the check of a reply that carries nothing. Below
 * the operations and the call alike: the op files' decoders are written
 * with it, and call.c, which runs the decoder an op gave it, frees the
 * scratch, knowing no decoder by name. */
#ifndef MOMENTO_UNPACK_H
#define MOMENTO_UNPACK_H

#include "methods.h"
#include "model/result.h"

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
 * the caller clears whatever `r` was given. An operation hands its RPC's
 * decoder to the call it starts (call.h). */
typedef int (*momento__decode_fn)(momento_result *r, const grpc_slice *msgs, size_t n_msgs,
                                  momento__scratch *scratch);

#define MOMENTO__DECODER(fn)                                                                       \
    int momento__decode_##fn(momento_result *r, const grpc_slice *msgs, size_t n_msgs,            \
                             momento__scratch *scratch)

/* Unpacks `msg` as a response message of RPC `m` (the table's descriptor)
 * and leaves it in `scratch` to be freed after the callback. NULL when it
 * does not decode. */
void *momento__unpack_reply(momento__rpc_id m, const grpc_slice *msg, momento__scratch *scratch);

/* The opening of every decoder's body (a plain one's, or a
 * decoder-defining macro's) for an RPC with one reply message: `m`, a
 * const Type *, is that message unpacked as RPC ID's response (left in
 * `scratch`), or the decoder returns MOMENTO_ERR_BAD_RESPONSE. */
#define MOMENTO__UNPACK_ONE(Type, ID)                                                              \
    (void)n_msgs;                                                                                  \
    const Type *m = momento__unpack_reply(MOMENTO__RPC_##ID, &msgs[0], scratch);                   \
    if (!m)                                                                                        \
        return MOMENTO_ERR_BAD_RESPONSE

/* For replies that carry nothing beyond being well-formed (set, delete,
 * ping, most control calls): checks that without allocating. */
int momento__decode_empty(momento_result *r, const grpc_slice *msg, momento_outcome outcome);

/* Defines the decoder of such an RPC, momento__decode_<fn>: the decoder
 * table (ops/decode.c) names one per RPC, and these are all this one body,
 * written once here rather than in each family's file. */
#define MOMENTO__EMPTY_DECODER(fn, outcome)                                                        \
    MOMENTO__DECODER(fn)                                                                           \
    {                                                                                              \
        (void)n_msgs;                                                                              \
        (void)scratch;                                                                             \
        return momento__decode_empty(r, &msgs[0], (outcome));                                      \
    }

#endif
