/* The one place that knows which transports exist (transports.c): given a
 * client's configuration it opens the ones it asks for and says which RPC
 * goes through which, so that the engine names no transport of its own
 * (as curl's multi handle meets its TLS backends through its vtls layer alone). */
#ifndef MOMENTO_TRANSPORTS_H
#define MOMENTO_TRANSPORTS_H

#include "methods.h"
#include "model/config.h"
#include "model/credentials.h"
#include "transport/transport.h"

#include <stdbool.h>
#include <stddef.h>

/* The most transports besides `loop` a configuration opens. */
#define MOMENTO__MAX_OWN_THREAD_TRANSPORTS 1

/* What momento__transports_open() opened, all of it the caller's. */
typedef struct momento__transports {
    /* The transport the client's completion thread runs (gRPC's): it
     * carries every RPC `routes` gives no other, and every stream. */
    momento__transport *loop;
    /* Transports that complete attempts on threads of their own (each
     * with shutdown and close ops), which the client adopts; oldest first. */
    momento__transport *own_thread[MOMENTO__MAX_OWN_THREAD_TRANSPORTS];
    size_t n_own_thread;
    /* The transport each RPC goes through: `loop` or one of own_thread. */
    momento__transport *routes[MOMENTO__RPC_COUNT];
    /* Get, set and delete go as single commands, never gathered into a
     * GetBatch or SetBatch: the transport that carries them has no batch
     * commands (protosocket's pipelined frames share writes and reads as
     * a batch would). The client then turns adaptive batching off. */
    bool unbatched;
} momento__transports;

/* Opens the transports `cfg` asks for, with `cfg` and `creds`, which must
 * outlive them: gRPC always, protosocket besides for get, set and delete
 * when cfg->transport is MOMENTO_TRANSPORT_PROTOSOCKET. Returns 0 with
 * *ret filled, or an error of the transports' (MOMENTO_ERR_NO_MEMORY,
 * MOMENTO_ERR_INVALID_ARGUMENT with momento_refusal_reason() saying why)
 * with nothing left open and *ret untouched. */
int momento__transports_open(momento__transports *ret, const momento_config *cfg,
                             const momento_credentials *creds);

#endif
