/* Retries (retry.c): whether an ended attempt is tried again, when, and the
 * queue of calls waiting for their next attempt. How an attempt is made is
 * call.c's. */
#ifndef MOMENTO_RETRY_H
#define MOMENTO_RETRY_H

#include "heap.h"
#include "methods.h"

#include <grpc/support/time.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct momento__call momento__call;
struct momento_client;
struct momento_config;

/* A call's place in the retry queue: embedded in the call. */
typedef struct momento__retry_entry {
    int64_t due_ns;         /* monotonic */
    size_t index;           /* in the queue; MOMENTO__HEAP_GONE when not in it */
    momento__call *call;
    struct momento__tracked *track; /* the call's, for its cancelled flag */
} momento__retry_entry;

/* Guarded by the client's lock; taken from only by the completion thread. */
typedef struct momento__retries {
    momento__heap waiting;  /* of momento__retry_entry, by due_ns */
    uint64_t jitter_state;
} momento__retries;

void momento__retries_init(momento__retries *r, uint64_t seed);
void momento__retries_clear(momento__retries *r);

static inline int64_t momento__now_ns(void)
{
    gpr_timespec t = gpr_now(GPR_CLOCK_MONOTONIC);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Whether the attempt number `attempt` (1 = the first), which ended with
 * `status`, is tried again, by the rule of the official SDKs
 * (docs/protocol.md "Retries") and the client's strategy: the delay before
 * the next attempt in ns (0 = at once), or -1 for no retry (not eligible,
 * out of attempts, or the delay would end past the deadline). The caller
 * has ruled out this process's own cancels. */
int64_t momento__retry_delay(struct momento_client *c, const momento__rpc *rpc, int attempt,
                             int status, int64_t now_ns, int64_t deadline_ns);

/* Makes the call's next attempt now (delay 0), or queues it for after
 * `delay_ns`. The call is ended instead (momento__call_give_up) when the
 * attempt cannot start, the queue cannot grow, or the client is closing. */
void momento__retry_later(struct momento_client *c, momento__retry_entry *e, int64_t now_ns,
                          int64_t delay_ns);

/* With the client's lock held: a waiting entry becomes due now (its call
 * was cancelled; the next run ends it). Returns whether it was waiting. */
bool momento__retries_expedite_locked(momento__retries *r, momento__retry_entry *e);

/* On the completion thread: starts the retries that are due (or, once the
 * client is closing, ends every waiting call as cancelled), and returns
 * when the next one is due (gpr_inf_future when none waits). */
gpr_timespec momento__retries_run(struct momento_client *c);

#endif
