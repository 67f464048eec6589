/* Blocking calls: the async call plus a wait (blocking.h shows the shape).
 * The completion thread copies the result out, so the caller owns what it
 * gets; a spare result allocated before sending stands in when that copy
 * fails, so that a request that was sent always yields a result. */
#include "engine/blocking.h"

#include "base/alloc.h"
#include "engine/client.h"
#include "engine/completion.h"
#include "model/metrics.h"
#include "model/result.h"
#include "model/validate.h"

#include <stdlib.h>

int momento__blocking_begin(momento__blocking *b, const momento_client *owner,
                            momento_result **ret)
{
    if (ret)
        *ret = NULL;
    if (!owner)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the client is NULL");
    /* The thread finishing the client's attempts would wait for itself. */
    if (momento__completion_here(owner))
        return momento__refuse(MOMENTO_ERR_WOULD_DEADLOCK,
                               "a blocking call from one of this client's callbacks would wait "
                               "for the thread that runs it");
    /* So would a hook call holding the client's metrics lock (dispatch
     * mode), for the completion thread waiting on that lock. */
    if (owner->cfg.metrics_lock && momento__metrics_hook_running(&owner->cfg))
        return momento__refuse(MOMENTO_ERR_WOULD_DEADLOCK,
                               "a blocking call from this client's metrics hook would wait for "
                               "the thread that reports its answer");
    b->spare = momento__malloc(sizeof(*b->spare));
    if (!b->spare)
        return MOMENTO_ERR_NO_MEMORY;
    b->done = false;
    b->owner = (momento_client *)owner; /* stepped, never changed: blocking_wait */
    b->error = MOMENTO_OK;
    b->result = NULL;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
    return MOMENTO_OK;
}

void momento__blocking_done(const momento_result *r, void *userdata)
{
    momento__blocking *b = userdata;
    momento_result *copy = NULL;
    int err = r->error;
    if (momento_result_dup(r, &copy) != MOMENTO_OK) {
        copy = b->spare;
        b->spare = NULL;
        momento__result_local_error(copy, MOMENTO_ERR_NO_MEMORY,
                                    "the request completed, but its result could not be copied");
        copy->grpc_status = r->grpc_status;
        copy->attempts = r->attempts;
        err = MOMENTO_ERR_NO_MEMORY;
    }
    pthread_mutex_lock(&b->lock);
    b->result = copy;
    b->error = err;
    b->done = true;
    pthread_cond_signal(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

int momento__blocking_wait(momento__blocking *b, int submitted, momento_result **ret)
{
    int rc = submitted;
    if (submitted == MOMENTO_OK) {
        pthread_mutex_lock(&b->lock);
        /* Without protosocket's I/O thread (momento_config_set_dispatch_io())
         * this thread reads the reply too: a blocking call never waits for
         * a dispatch. Short steps: another thread may read it first. */
        while (!b->done)
            momento__client_wait_or_step(b->owner, &b->cond, &b->lock, 1);
        pthread_mutex_unlock(&b->lock);
        rc = b->error;
        if (ret)
            *ret = b->result;
        else
            momento_result_free(b->result);
    } else if (ret) {
        /* Refused before sending: the reason travels in an error result,
         * since the caller cannot know which argument was wrong otherwise. */
        const char *why = momento_refusal_reason();
        momento_result local;
        momento__result_local_error(&local, submitted, *why ? why : momento_strerror(submitted));
        if (momento_result_dup(&local, ret) != MOMENTO_OK) {
            momento__result_local_error(b->spare, submitted, momento_strerror(submitted));
            *ret = b->spare; /* the generic text, which needs no copy */
            b->spare = NULL;
        }
    }
    momento__blocking_end(b);
    return rc;
}

void momento__blocking_end(momento__blocking *b)
{
    free(b->spare);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->cond);
}

bool momento__blocking_goes_alone(const momento_client *c, momento_callback cb)
{
    return cb == momento__blocking_done && c->dispatch.on;
}
