/* Request groups: a reference count, a count of requests and the
 * condition their waiters sleep on (group.h has the rules). What a wait
 * must know of the client (its dispatch mode, its completion thread) is
 * the client's: momento_request_group_wait() lives in engine/client.c. */
#include "model/group.h"

#include "base/alloc.h"
#include "model/validate.h"

#include <stdlib.h>

int momento_request_group_new(momento_client *c, momento_request_group **ret)
{
    momento__refusal_clear();
    if (!c || !ret)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "%s is NULL",
                               !c ? "the client" : "ret");
    momento_request_group *g = momento__calloc(1, sizeof(*g));
    if (!g)
        return MOMENTO_ERR_NO_MEMORY;
    g->client = c;
    atomic_init(&g->refs, 1);
    atomic_init(&g->n, 0);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->zero, NULL);
    *ret = g;
    return MOMENTO_OK;
}

static void unref(momento_request_group *g)
{
    if (atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) != 1)
        return;
    /* The last reference: no request counts in it and nobody waits on it
     * (a waiter holds the application's reference). */
    pthread_cond_destroy(&g->zero);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

void momento_request_group_free(momento_request_group *g)
{
    if (g)
        unref(g);
}

size_t momento_request_group_in_flight(const momento_request_group *g)
{
    return g ? atomic_load(&((momento_request_group *)g)->n) : 0;
}

void momento__group_add(momento_request_group *g)
{
    if (!g)
        return;
    atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
    atomic_fetch_add(&g->n, 1);
}

void momento__group_done(momento_request_group *g)
{
    if (!g)
        return;
    if (atomic_fetch_sub(&g->n, 1) == 1) {
        /* Under the lock, so a waiter that saw 1 is already waiting. */
        pthread_mutex_lock(&g->lock);
        pthread_cond_broadcast(&g->zero);
        pthread_mutex_unlock(&g->lock);
    }
    unref(g);
}
