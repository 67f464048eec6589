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

/* A pseudo-random number below n (n > 0) from the client's generator:
 * jitter only needs clients that failed together not to retry together. */
static int64_t random_below(momento_client *c, int64_t n)
{
    pthread_mutex_lock(&c->lock);
    momento__retries *r = &c->retries;
    r->jitter_state = r->jitter_state * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t x = r->jitter_state >> 33;
    pthread_mutex_unlock(&c->lock);
    return (int64_t)(x % (uint64_t)n);
}

int64_t momento__retry_delay(momento_client *c, const momento__rpc *rpc, int attempt, int status,
                             int64_t now_ns, int64_t deadline_ns)
{
    const momento_config *cfg = &c->cfg;
    if (!rpc->idempotent || attempt >= (int)cfg->retry_max_attempts)
        return -1;
    /* The JS SDK's default eligibility: CANCELLED too, which servers send
     * while they deploy (the caller has ruled out this process's cancels). */
    bool eligible = status == GRPC_STATUS_UNAVAILABLE || status == GRPC_STATUS_INTERNAL ||
                    status == GRPC_STATUS_CANCELLED;
    /* Fixed-timeout mode: an attempt that ran out of its own time is retried
     * while the overall deadline allows. */
    if (cfg->retry_attempt_timeout_ms && status == GRPC_STATUS_DEADLINE_EXCEEDED)
        eligible = true;
    if (!eligible)
        return -1;
    int64_t delay = 0;
    if (cfg->retry_backoff_max_us) {
        /* Exponential backoff with decorrelated jitter, as the JS SDK: the
         * base doubles per retry up to the cap, the delay is drawn from
         * [base, 1.5 base]. */
        int64_t base = (int64_t)cfg->retry_backoff_initial_us * 1000;
        int64_t cap = (int64_t)cfg->retry_backoff_max_us * 1000;
        for (int i = 1; i < attempt && base < cap; i++)
            base *= 2;
        if (base > cap)
            base = cap;
        delay = base + random_below(c, base / 2 + 1);
    } else if (cfg->retry_delay_ms) {
        /* Fixed delay, +/-10%. */
        delay = (int64_t)cfg->retry_delay_ms * 1000000;
        delay += delay / 10 * (random_below(c, 2001) - 1000) / 1000;
    }
    return now_ns + delay < deadline_ns ? delay : -1;
}

void momento__retry_later(momento_client *c, momento__retry_entry *e, int64_t now_ns,
                          int64_t delay_ns)
{
    if (delay_ns == 0) {
        if (momento__call_attempt(e->call) != MOMENTO_OK)
            momento__call_give_up(e->call, GRPC_STATUS_UNAVAILABLE, "could not start a retry");
        return;
    }
    pthread_mutex_lock(&c->lock);
    momento__retries *r = &c->retries;
    e->due_ns = now_ns + delay_ns;
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
