/* Retries: the official SDKs' rule for whether an ended attempt is tried
 * again, and the delay between attempts (with jitter). A call waiting for
 * its next attempt waits on a client timer (call.c), like everything else
 * the completion thread does at a given time. */
#include "engine/retry.h"

#include "engine/client.h"

void momento__retries_init(momento__retries *r, uint64_t seed)
{
    r->jitter_state = seed;
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
    /* Opted in: a server's DEADLINE_EXCEEDED too (one of the client's own
     * deadline is not retried: the check below finds no time left). */
    if (cfg->retry_deadline_exceeded && status == GRPC_STATUS_DEADLINE_EXCEEDED)
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
