/* Client lifecycle, and every rule about how long a request lives: a
 * request is accepted into the in-flight list, its gRPC call is published
 * there so that a shutdown can cancel it, and it is retired once its one
 * callback has returned. momento_client_free() refuses new requests,
 * cancels the tracked ones and waits until the last is retired; called from
 * a callback (on the completion thread, which must keep running to deliver
 * the rest) it only marks the release as deferred, and the completion thread
 * releases the client after the last retirement. As hiredis's async.c keeps
 * its exactly-once and deferred-free rules in one place, nothing outside
 * this file touches the list, the count or `drained`, or writes `closing`
 * (retry.c reads it in the lock section that queues a retry). */
#include "client.h"

#include "alloc.h"
#include "call.h"
#include "grpc_util.h"
#include "log.h"

#include <grpc/support/time.h>
#include <stdlib.h>
#include <string.h>

_Thread_local const momento_client *momento__current_client;

static void destroy(momento_client *c)
{
    momento__channels_close(&c->channels);
    if (c->cq)
        grpc_completion_queue_destroy(c->cq);
    grpc_slice_unref(c->auth_value);
    for (size_t i = 0; i < c->n_extra_md; i++) {
        grpc_slice_unref(c->extra_md[i].key);
        grpc_slice_unref(c->extra_md[i].value);
    }
    if (c->token_in_log_filter)
        momento__log_remove_secret(c->creds.token);
    momento__credentials_clear(&c->creds);
    momento__config_clear(&c->cfg);
    momento__retries_clear(&c->retries);
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
        wake = momento__retries_run(c);
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
    momento_client *c = momento__calloc(1, sizeof(*c));
    if (!c)
        return MOMENTO_ERR_NO_MEMORY;
    momento__log_install();
    grpc_init();
    momento__config_defaults(&c->cfg);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->drained, NULL);
    c->auth_value = grpc_empty_slice();
    momento__retries_init(&c->retries,
                          (uint64_t)(uintptr_t)c ^ (uint64_t)gpr_now(GPR_CLOCK_REALTIME).tv_nsec);

    int rc = cfg ? momento__config_copy(&c->cfg, cfg) : MOMENTO_OK;
    if (rc == MOMENTO_OK)
        rc = momento__credentials_copy(&c->creds, creds);
    if (rc == MOMENTO_OK) {
        rc = momento__log_add_secret(c->creds.token);
        c->token_in_log_filter = rc == MOMENTO_OK;
    }
    if (rc == MOMENTO_OK) {
        c->auth_value = grpc_slice_from_copied_string(c->creds.token);
        c->cq = grpc_completion_queue_create_for_next(NULL);
        rc = c->cq ? momento__channels_open(&c->channels, &c->cfg, &c->creds)
                   : MOMENTO_ERR_NO_MEMORY;
    }
    if (rc == MOMENTO_OK && pthread_create(&c->thread, NULL, completion_loop, c) != 0)
        rc = MOMENTO_ERR_NO_MEMORY;
    if (rc != MOMENTO_OK) {
        if (c->cq)
            momento__cq_drain(c->cq, NULL, NULL);
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
    /* Each tracked call still completes, with CANCELLED, through its
     * callback; calls waiting to retry have no gRPC call, and the next
     * momento__retries_run() ends them. */
    for (momento__tracked *t = c->in_flight; t; t = t->next)
        if (t->call)
            grpc_call_cancel_with_status(t->call, GRPC_STATUS_CANCELLED,
                                         "cancelled: the client was freed", NULL);
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

int momento__client_accept(momento_client *c, momento__tracked *t, grpc_call *gc)
{
    /* One lock section accepts the request and publishes its gRPC call,
     * both of which momento_client_free() reads under the lock. */
    pthread_mutex_lock(&c->lock);
    if (c->closing) {
        pthread_mutex_unlock(&c->lock);
        return MOMENTO_ERR_CLOSED;
    }
    t->prev = NULL;
    t->next = c->in_flight;
    if (c->in_flight)
        c->in_flight->prev = t;
    c->in_flight = t;
    c->n_in_flight++;
    t->call = gc;
    pthread_mutex_unlock(&c->lock);
    return MOMENTO_OK;
}

grpc_call *momento__client_publish(momento_client *c, momento__tracked *t, grpc_call *gc)
{
    pthread_mutex_lock(&c->lock);
    grpc_call *old = t->call;
    t->call = gc;
    pthread_mutex_unlock(&c->lock);
    return old;
}

void momento__client_retire(momento_client *c, momento__tracked *t)
{
    pthread_mutex_lock(&c->lock);
    if (t->prev)
        t->prev->next = t->next;
    else
        c->in_flight = t->next;
    if (t->next)
        t->next->prev = t->prev;
    if (--c->n_in_flight == 0 && c->closing) {
        pthread_cond_broadcast(&c->drained);
        /* A free deferred from a callback: the completion thread ends its
         * loop and releases the client (completion_loop). */
        if (c->free_deferred)
            grpc_completion_queue_shutdown(c->cq);
    }
    pthread_mutex_unlock(&c->lock);
}

bool momento__client_closing(momento_client *c)
{
    pthread_mutex_lock(&c->lock);
    bool closing = c->closing;
    pthread_mutex_unlock(&c->lock);
    return closing;
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
