/* Retries: the official SDKs' rule for whether an ended attempt is tried
 * again, the delay between attempts (with jitter), and the queue of calls
 * waiting for it, which only the completion thread takes from. */
#include "retry.h"

#include "alloc.h"
#include "call.h"
#include "client.h"

#define WAKE_NS (50 * 1000000ll)

static bool due_before(const void *a, const void *b)
{
    return ((const momento__retry_entry *)a)->due_ns < ((const momento__retry_entry *)b)->due_ns;
}

static void entry_moved(void *item, size_t index)
{
    ((momento__retry_entry *)item)->index = index;
}

void momento__retries_init(momento__retries *r, uint64_t seed)
{
    momento__heap_init(&r->waiting, due_before, momento__realloc);
    momento__heap_track(&r->waiting, entry_moved);
    r->jitter_state = seed;
}

void momento__retries_clear(momento__retries *r)
{
    momento__heap_clear(&r->waiting);
}

bool momento__retry_wanted(const momento_config *cfg, const momento__rpc *rpc, int attempt,
                           int status, int64_t now_ns, int64_t deadline_ns)
{
    if (!rpc->idempotent || attempt >= (int)cfg->retry_max_attempts)
        return false;
    bool eligible = status == GRPC_STATUS_UNAVAILABLE || status == GRPC_STATUS_INTERNAL;
    /* Fixed-timeout mode: an attempt that ran out of its own time is retried
     * while the overall deadline allows. */
    if (cfg->retry_attempt_timeout_ms && status == GRPC_STATUS_DEADLINE_EXCEEDED)
        eligible = true;
    return eligible && now_ns + (int64_t)cfg->retry_delay_ms * 1000000 < deadline_ns;
}

void momento__retry_later(momento_client *c, momento__retry_entry *e, int64_t now_ns)
{
    if (c->cfg.retry_delay_ms == 0) {
        if (momento__call_attempt(e->call) != MOMENTO_OK)
            momento__call_give_up(e->call, GRPC_STATUS_UNAVAILABLE, "could not start a retry");
        return;
    }
    /* +/-10% jitter, so clients that failed together do not retry together. */
    int64_t delay = (int64_t)c->cfg.retry_delay_ms * 1000000;
    pthread_mutex_lock(&c->lock);
    momento__retries *r = &c->retries;
    r->jitter_state = r->jitter_state * 6364136223846793005ull + 1442695040888963407ull;
    int64_t jitter = (int64_t)((r->jitter_state >> 33) % 2001) - 1000; /* -1000..1000 */
    e->due_ns = now_ns + delay + delay / 10 * jitter / 1000;
    bool closing = c->closing, cancelled = e->track->cancelled;
    bool queued = !closing && !cancelled && momento__heap_push(&r->waiting, e) == 0;
    pthread_mutex_unlock(&c->lock);
    if (closing)
        momento__call_give_up(e->call, GRPC_STATUS_CANCELLED, "cancelled: the client was freed");
    else if (cancelled)
        momento__call_give_up(e->call, GRPC_STATUS_CANCELLED, e->track->cancel_why);
    else if (!queued) /* as when a retry cannot start: the attempt's own failure */
        momento__call_give_up(e->call, GRPC_STATUS_UNAVAILABLE,
                              "could not queue a retry: out of memory");
}

bool momento__retries_expedite_locked(momento__retries *r, momento__retry_entry *e)
{
    if (e->index == MOMENTO__HEAP_GONE)
        return false;
    momento__heap_remove(&r->waiting, e->index);
    e->due_ns = 0;
    momento__heap_push(&r->waiting, e); /* cannot fail: it just left */
    return true;
}

gpr_timespec momento__retries_run(momento_client *c)
{
    /* Only the completion thread (the caller) adds to or takes from the
     * queue, so it may find the queue empty without the lock: the case after
     * nearly every event. */
    if (c->retries.waiting.n == 0)
        return gpr_inf_future(GPR_CLOCK_MONOTONIC);
    for (;;) {
        pthread_mutex_lock(&c->lock);
        momento__retry_entry *e = momento__heap_peek(&c->retries.waiting);
        if (!e) {
            pthread_mutex_unlock(&c->lock);
            return gpr_inf_future(GPR_CLOCK_MONOTONIC);
        }
        int64_t due = e->due_ns, now = momento__now_ns();
        if (!c->closing && due > now) {
            pthread_mutex_unlock(&c->lock);
            /* Nothing can interrupt the completion thread's wait, so while
             * a retry waits it looks again at least every WAKE_NS: a
             * momento_client_free() meanwhile then ends the waiting calls
             * promptly instead of after their delay (up to 66 s). */
            if (due > now + WAKE_NS)
                due = now + WAKE_NS;
            gpr_timespec t = {due / 1000000000, (int32_t)(due % 1000000000), GPR_CLOCK_MONOTONIC};
            return t;
        }
        bool closing = c->closing, cancelled = e->track->cancelled;
        momento__heap_pop(&c->retries.waiting);
        pthread_mutex_unlock(&c->lock);
        if (closing)
            momento__call_give_up(e->call, GRPC_STATUS_CANCELLED, "cancelled: the client was freed");
        else if (cancelled)
            momento__call_give_up(e->call, GRPC_STATUS_CANCELLED, e->track->cancel_why);
        else if (momento__call_attempt(e->call) != MOMENTO_OK)
            momento__call_give_up(e->call, GRPC_STATUS_UNAVAILABLE, "could not start a retry");
    }
}
