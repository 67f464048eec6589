/* Cancel tokens: a flag, a reference count and the hooks of the requests
 * that hold the token (cancel.h has the rules). One token may cover any
 * number of requests on any number of clients and coalescers. */
#include "model/cancel.h"

#include "base/alloc.h"
#include "model/validate.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <utlist.h>

struct momento_cancel_token {
    atomic_size_t refs;
    atomic_bool cancelled;
    pthread_mutex_t lock;       /* guards the hook list and serialises firing */
    momento__cancel_hook *hooks;
};

int momento_cancel_token_new(momento_cancel_token **ret)
{
    if (!ret)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento_cancel_token *t = momento__calloc(1, sizeof(*t));
    if (!t)
        return MOMENTO_ERR_NO_MEMORY;
    atomic_init(&t->refs, 1);
    atomic_init(&t->cancelled, false);
    pthread_mutex_init(&t->lock, NULL);
    *ret = t;
    return MOMENTO_OK;
}

momento_cancel_token *momento_cancel_token_ref(momento_cancel_token *t)
{
    if (t)
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

void momento_cancel_token_free(momento_cancel_token *t)
{
    if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    /* The last reference: no request holds it, so no hook is hung. */
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void momento_cancel(momento_cancel_token *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    if (!atomic_exchange(&t->cancelled, true)) {
        /* Each hook fires once: it is unhung as it fires, so a later remove
         * by its owner is a no-op. */
        while (t->hooks) {
            momento__cancel_hook *h = t->hooks;
            DL_DELETE(t->hooks, h);
            h->linked = false;
            h->fire(h);
        }
    }
    pthread_mutex_unlock(&t->lock);
}

int momento_cancel_token_is_cancelled(const momento_cancel_token *t)
{
    return t && atomic_load(&t->cancelled) ? 1 : 0;
}

int momento__cancel_hook_add(momento_cancel_token *t, momento__cancel_hook *h)
{
    pthread_mutex_lock(&t->lock);
    if (atomic_load(&t->cancelled)) {
        pthread_mutex_unlock(&t->lock);
        h->linked = false;
        return momento__refuse(MOMENTO_ERR_CANCELLED,
                               "the request's cancel token was already cancelled");
    }
    DL_PREPEND(t->hooks, h);
    h->linked = true;
    pthread_mutex_unlock(&t->lock);
    return MOMENTO_OK;
}

void momento__cancel_hook_remove(momento_cancel_token *t, momento__cancel_hook *h)
{
    /* Taking the lock also waits out a momento_cancel() firing this hook. */
    pthread_mutex_lock(&t->lock);
    if (h->linked) {
        DL_DELETE(t->hooks, h);
        h->linked = false;
    }
    pthread_mutex_unlock(&t->lock);
}
