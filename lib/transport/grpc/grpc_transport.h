/* The gRPC transport (grpc_transport.c): the seam's operations
 * (transport/transport.h) over gRPC C core, and the tag that every batch on
 * the client's completion queue carries. */
#ifndef MOMENTO_GRPC_TRANSPORT_H
#define MOMENTO_GRPC_TRANSPORT_H

#include "transport/grpc/channel.h"
#include "transport/transport.h"

#include <grpc/grpc.h>

/* What every batch started on the client's completion queue carries as its
 * tag: a pointer to one of these, embedded in its owner (an attempt, a
 * subscription's stream, the kick), whose handler the completion loop
 * runs. As libuv's uv__io_t carries its callback, the loop knows nothing
 * of who owns the tag; the owner finds itself from the tag's address
 * (offsetof). */
typedef struct momento__tag {
    /* On the completion thread, no lock held: the batch has completed;
     * `success` as gRPC reports it. The owner must outlive every batch it
     * started with this tag. */
    void (*cb)(struct momento__tag *tag, int success);
} momento__tag;

/* The gRPC transport's state: the client's completion queue and channels,
 * which the client still opens, runs and closes (docs/transport.md). */
typedef struct momento__grpc_transport {
    momento__transport base; /* first: base.ops is &momento__grpc_ops */
    grpc_completion_queue *cq;
    momento__channels *channels;
} momento__grpc_transport;

extern const momento__transport_ops momento__grpc_ops;

#endif
