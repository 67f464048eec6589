/* The gRPC transport (grpc_transport.c): the seam's operations
 * (transport/transport.h) over gRPC C core, and the tag that every batch on
 * the client's completion queue carries. */
#ifndef MOMENTO_GRPC_TRANSPORT_H
#define MOMENTO_GRPC_TRANSPORT_H

#include "transport/grpc/channel.h"
#include "transport/transport.h"

#include <grpc/grpc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

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

/* The gRPC transport's state: the client's completion queue, its channels
 * and the lame channel that wakes the queue (grpc_wake). Made by
 * momento__grpc_transport_new(), run by the client's completion thread
 * through the ops table (docs/transport.md), freed by its close(). The
 * engine sees only `base`; tests may look inside. */
typedef struct momento__grpc_transport {
    momento__transport base; /* first: base.ops is &momento__grpc_ops */
    grpc_completion_queue *cq;
    momento__channels channels;
    bool channels_open;
    bool drained;            /* run() saw the queue's shutdown */

    /* Waking the queue from another thread (grpc_wake): a call on a lame
     * channel, which fails at once and so posts its completion. */
    grpc_channel *kick_channel;
    atomic_bool kick_pending;
    momento__tag kick_tag;   /* the kick call's batch: kick_done() */
    grpc_call *kick_call;
    grpc_status_code kick_status;
    grpc_slice kick_details;
    grpc_metadata_array kick_trailing;
    /* A kick's batch must not start on a queue shut down: gRPC aborts the
     * process on that. shut_lock orders each kick's start before the
     * shutdown or after it (then `shut`, and the kick is not made). */
    pthread_mutex_t shut_lock;
    bool shut;
} momento__grpc_transport;

/* Opens a gRPC transport with the client's config and credentials, which
 * must outlive it: the queue, the wake-up channel and every channel of the
 * three planes. Returns MOMENTO_OK with *ret set (its ops' close() undoes
 * it), or an error with *ret NULL and nothing left open. */
int momento__grpc_transport_new(momento__transport **ret, const momento_config *cfg,
                                const momento_credentials *creds);

extern const momento__transport_ops momento__grpc_ops;

#endif
