/* Small gRPC core helpers that the library and momento-local both need. */
#ifndef MOMENTO_COMMON_GRPC_UTIL_H
#define MOMENTO_COMMON_GRPC_UTIL_H

#include <grpc/grpc.h>

/* An integer channel argument. `key` must outlive the grpc_arg (gRPC's
 * GRPC_ARG_* names are static strings). */
grpc_arg momento__int_arg(const char *key, int value);

/* Shuts `cq` down and takes every remaining event until gRPC reports the
 * shutdown, so that it may be destroyed. Each completed operation's tag is
 * passed to `on_tag` (NULL: ignored). Does not destroy `cq`. */
void momento__cq_drain(grpc_completion_queue *cq, void (*on_tag)(void *tag, void *arg),
                       void *arg);

/* A received message as one slice (a reference to release): the usual
 * message, one uncompressed slice, is taken where it is, as gRPC's C++
 * ByteBuffer::TrySingleSlice does, rather than copied by readall(); any
 * other is read whole. An empty slice when it cannot be read. Does not
 * destroy `bb`. */
grpc_slice momento__byte_buffer_slice(grpc_byte_buffer *bb);

#endif
