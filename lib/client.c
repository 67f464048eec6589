/* Client lifecycle: channels, the completion thread that runs callbacks, and
 * a shutdown that cancels what is in flight and waits until every callback
 * has run exactly once. */
#include "internal.h"

#include <grpc/support/time.h>
#include <stdlib.h>
#include <string.h>

_Thread_local const momento_client *momento__current_client;

static void destroy(momento_client *c)
{
    momento__channels_close(c);
    if (c->cq)
        grpc_completion_queue_destroy(c->cq);
    grpc_slice_unref(c->auth_value);
    for (size_t i = 0; i < c->n_extra_md; i++) {
        grpc_slice_unref(c->extra_md[i].key);
        grpc_slice_unref(c->extra_md[i].value);
    }
    momento__credentials_clear(&c->creds);
    momento__config_clear(&c->cfg);
    free(c->retry_heap);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->drained);
    free(c);
    grpc_shutdown();
}

static void *completion_loop(void *arg)
{
    momento_client *c = arg;
    momento__current_client = c;
    gpr_timespec wake = gpr_inf_future(GPR_CLOCK_MONOTONIC);
    for (;;) {
        /* Sleep until the next event or the next delayed retry. */
        grpc_event ev = grpc_completion_queue_next(c->cq, wake, NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type == GRPC_OP_COMPLETE)
            momento__call_event(ev.tag, ev.success);
        wake = momento__run_retries(c);
    }
    momento__current_client = NULL;

    pthread_mutex_lock(&c->lock);
    bool deferred = c->free_deferred;
    pthread_mutex_unlock(&c->lock);
    if (deferred) {
        /* momento_client_free() was called from a callback: nobody will join
         * this thread, so it releases the client itself. */
        pthread_detach(pthread_self());
        destroy(c);
    }
    return NULL;
}

int momento_client_new(momento_client **ret, const momento_config *cfg,
                       const momento_credentials *creds)
{
    if (!ret || !creds)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_client *c = calloc(1, sizeof(*c));
    if (!c)
        return MOMENTO_ERR_NO_MEMORY;
    momento__log_install();
    grpc_init();
    momento__config_defaults(&c->cfg);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->drained, NULL);
    c->auth_value = grpc_empty_slice();
    c->jitter_state = (uint64_t)(uintptr_t)c ^ (uint64_t)gpr_now(GPR_CLOCK_REALTIME).tv_nsec;

    int rc = cfg ? momento__config_copy(&c->cfg, cfg) : MOMENTO_OK;
    if (rc == MOMENTO_OK)
        rc = momento__credentials_copy(&c->creds, creds);
    if (rc == MOMENTO_OK) {
        c->auth_value = grpc_slice_from_copied_string(c->creds.token);
        c->cq = grpc_completion_queue_create_for_next(NULL);
        rc = c->cq ? momento__channels_open(c) : MOMENTO_ERR_NO_MEMORY;
    }
    if (rc == MOMENTO_OK && pthread_create(&c->thread, NULL, completion_loop, c) != 0)
        rc = MOMENTO_ERR_NO_MEMORY;
    if (rc != MOMENTO_OK) {
        if (c->cq) {
            grpc_completion_queue_shutdown(c->cq);
            while (grpc_completion_queue_next(c->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL)
                       .type != GRPC_QUEUE_SHUTDOWN)
                ;
        }
        destroy(c);
        return rc;
    }
    *ret = c;
    return MOMENTO_OK;
}

void momento_client_free(momento_client *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    if (c->closing) { /* a second free of the same client: ignore it */
        pthread_mutex_unlock(&c->lock);
        return;
    }
    c->closing = true;
    momento__calls_cancel_all(c);
    if (momento__current_client == c) {
        /* Inside one of our callbacks, which is itself still counted in
         * flight: the completion thread finishes the job once it drains. */
        c->free_deferred = true;
        pthread_mutex_unlock(&c->lock);
        return;
    }
    while (c->n_in_flight > 0)
        pthread_cond_wait(&c->drained, &c->lock);
    pthread_mutex_unlock(&c->lock);

    grpc_completion_queue_shutdown(c->cq);
    pthread_join(c->thread, NULL);
    destroy(c);
}

size_t momento_client_in_flight(const momento_client *c)
{
    if (!c)
        return 0;
    momento_client *mc = (momento_client *)c; /* the lock is not part of the value */
    pthread_mutex_lock(&mc->lock);
    size_t n = mc->n_in_flight;
    pthread_mutex_unlock(&mc->lock);
    return n;
}

int momento__client_add_header(momento_client *c, const char *key, const char *value)
{
    if (!c || !key || !value || c->n_extra_md == MOMENTO__MAX_EXTRA_HEADERS)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    c->extra_md[c->n_extra_md].key = grpc_slice_from_copied_string(key);
    c->extra_md[c->n_extra_md].value = grpc_slice_from_copied_string(value);
    c->n_extra_md++;
    return MOMENTO_OK;
}
