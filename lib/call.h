/* One RPC from start to callback (call.c): its attempts on the wire, the
 * status mapping and decoding, and the callback. */
#ifndef MOMENTO_CALL_H
#define MOMENTO_CALL_H

#include "methods.h"
#include "momento/momento.h"

#include <grpc/grpc.h>

typedef struct momento__call momento__call;

/* Starts RPC `m`. `req` is packed at once; `cache` is sent as the `cache`
 * header for data-plane RPCs (NULL otherwise). Returns 0 when accepted
 * (exactly one callback follows), or MOMENTO_ERR_NO_MEMORY,
 * MOMENTO_ERR_CLOSED or MOMENTO_ERR_UNKNOWN (no callback). */
int momento__call_start(momento_client *c, momento__rpc_id m, const char *cache,
                        const ProtobufCMessage *req, momento_callback cb, void *userdata);
/* Runs on the completion thread for each completion-queue event of a call
 * (a call has a second tag, for stream messages). */
void momento__call_event(void *tag, int success);
/* Starts the call's next attempt (a due retry). Returns 0, or an error
 * when it could not start (then the caller gives up). */
int momento__call_attempt(momento__call *call);
/* Ends a call that will make no further attempt, with a local status. */
void momento__call_give_up(momento__call *call, grpc_status_code status, const char *why);

#endif
