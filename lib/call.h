/* One RPC from start to callback (call.c): its attempts on the wire, the
 * status mapping and decoding, and the callback. */
#ifndef MOMENTO_CALL_H
#define MOMENTO_CALL_H

#include "methods.h"
#include "momento/momento.h"

#include <grpc/grpc.h>
#include <grpc/support/time.h>
#include <stdbool.h>

typedef struct momento__call momento__call;

/* Starts RPC `m`. `req` is packed at once; `cache` is sent as the `cache`
 * header for data-plane RPCs (NULL otherwise). Returns 0 when accepted
 * (exactly one callback follows), or MOMENTO_ERR_NO_MEMORY,
 * MOMENTO_ERR_CLOSED or MOMENTO_ERR_UNKNOWN (no callback). */
int momento__call_start(momento_client *c, momento__rpc_id m, const char *cache,
                        const ProtobufCMessage *req, momento_callback cb, void *userdata);

/* What a call may need beyond its RPC: zero-initialise, set what applies. */
typedef struct momento__call_opts {
    /* The overall deadline (GPR_CLOCK_MONOTONIC) when it is not now + the
     * client's timeout: the pages of one listing share the first's. */
    gpr_timespec deadline;
    bool has_deadline;
    /* A stream's reply must have exactly this many messages (a batch: one
     * per key); any other count is MOMENTO_ERR_BAD_RESPONSE, and reading
     * stops at the first message too many. 0: any number. */
    size_t expect_msgs;
} momento__call_opts;

/* momento__call_start() with options (NULL: none). */
int momento__call_start_with(momento_client *c, momento__rpc_id m, const char *cache,
                             const ProtobufCMessage *req, const momento__call_opts *opts,
                             momento_callback cb, void *userdata);
/* Runs on the completion thread for each completion-queue event of a call
 * (a call has a second tag, for stream messages). */
void momento__call_event(void *tag, int success);
/* Starts the call's next attempt (a due retry). Returns 0, or an error
 * when it could not start (then the caller gives up). */
int momento__call_attempt(momento__call *call);
/* Ends a call that will make no further attempt, with a local status. */
void momento__call_give_up(momento__call *call, grpc_status_code status, const char *why);

#endif
