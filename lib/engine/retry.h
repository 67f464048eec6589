/* Retries (retry.c): the policy alone - whether an ended attempt is tried
 * again, and after what delay. How an attempt is made, and how a call
 * waits for its next one (a client timer, timer.h), is call.c's. */
#ifndef MOMENTO_RETRY_H
#define MOMENTO_RETRY_H

#include "methods.h"

#include <grpc/support/time.h>
#include <stdbool.h>
#include <stdint.h>

struct momento_client;

/* The policy's state: the client's jitter generator. Embedded in the
 * client; guarded by the client's lock. */
typedef struct momento__retries {
    uint64_t jitter_state;
} momento__retries;

void momento__retries_init(momento__retries *r, uint64_t seed);

/* Whether the attempt number `attempt` (1 = the first), which ended with
 * `status`, is tried again, by the rule of the official SDKs
 * (docs/protocol.md "Retries") and the client's strategy: the delay before
 * the next attempt in ns (0 = at once), or -1 for no retry (not eligible,
 * out of attempts, or the delay would end past the deadline). The caller
 * has ruled out this process's own cancels. Any thread; takes the
 * client's lock for the jitter. */
int64_t momento__retry_delay(struct momento_client *c, const momento__rpc *rpc, int attempt,
                             int status, int64_t now_ns, int64_t deadline_ns);

#endif
