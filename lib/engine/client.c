/* Client lifecycle, and every rule about how long a request lives: a
 * request is accepted into the in-flight list, its current attempt (a
 * transport's, or a stream's gRPC call) is published there so that a
 * shutdown can cancel it, and it is retired once its one
 * callback has returned. momento_client_free() refuses new requests,
 * cancels the tracked ones and waits until the last is retired; called from
 * a callback (on the completion thread, which must keep running to deliver
 * the rest) it only marks the release as deferred, and the completion thread
 * releases the client after the last retirement. As hiredis's async.c keeps
 * its exactly-once and deferred-free rules in one place, nothing outside
 * this file touches the list, the count or `drained`, or writes `closing`. */
#include "engine/client.h"

#include "base/alloc.h"
#include "base/log.h"
#include "clock.h"
#include "engine/completion.h"
#include "model/group.h"
#include "model/validate.h"
#include "transport/transports.h"

#include <errno.h>
#include <grpc/support/time.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <utlist.h>

static void destroy(momento_client *c)
{
    /* Every request is retired and the loop has ended: nothing of the
     * adopted transports is under way. Their threads are ended first: one
     * may still be on its way out of a request it retired, about to queue
     * its late answer for dispatch (call.c deliver). */
    for (size_t i = 0; i < c->n_adopted; i++)
        c->adopted[i]->ops->shutdown(c->adopted[i]);
    /* Callbacks still queued for dispatch run next, while the client can
     * still refuse what they submit (it is closing; a shut-down transport
     * refuses a launch too). */
    momento__dispatcher_close(&c->dispatch);
    for (size_t i = 0; i < c->n_adopted; i++)
        c->adopted[i]->ops->close(c->adopted[i]);
    if (c->transport)
        c->transport->ops->close(c->transport);
    if (c->dispatch_poll >= 0)
        close(c->dispatch_poll);
    momento__timers_clear(c);
    momento__rpc_hook *hook = atomic_load(&c->rpc_hook);
    if (hook) /* the optional part that hung itself on the client goes with it */
        hook->release(hook);
    momento__part *near = atomic_load(&c->near);
    if (near)
        near->release(near);
    if (c->near_sync)
        c->near_sync->release(c->near_sync);
    grpc_slice_unref(c->auth_value);
    for (size_t i = 0; i < c->n_extra_md; i++) {
        grpc_slice_unref(c->extra_md[i].key);
        grpc_slice_unref(c->extra_md[i].value);
    }
    if (c->token_in_log_filter)
        momento__log_remove_secret(c->creds.token);
    momento__credentials_clear(&c->creds);
    momento__config_clear(&c->cfg);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->gate.lock);
    pthread_mutex_destroy(&c->observers_lock);
    pthread_mutex_destroy(&c->topics_lock);
    pthread_mutex_destroy(&c->metrics_lock);
    pthread_cond_destroy(&c->drained);
    pthread_cond_destroy(&c->idle);
    free(c);
    grpc_shutdown();
}

/* A queued callback of the application's has returned (the dispatcher's
 * `ran`): its request is done. `tag` is the group respond.c pushed. */
static void dispatched(momento__dispatcher *d, void *tag)
{
    momento__request_done((momento_client *)((char *)d - offsetof(momento_client, dispatch)), tag);
}

int momento__client_route(momento_client *c, momento__rpc_id m, momento__transport *t)
{
    if (!c || !t || (unsigned)m >= MOMENTO__RPC_COUNT)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    t->post = momento__completion_post;
    t->finish = momento__completion_finish;
    t->host = c;
    c->routes[m] = t;
    return MOMENTO_OK;
}

int momento__client_adopt(momento_client *c, momento__transport *t)
{
    if (!c || !t || !t->ops->shutdown || !t->ops->close || c->n_adopted == MOMENTO__MAX_ADOPTED)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    c->adopted[c->n_adopted++] = t;
    return MOMENTO_OK;
}

/* Opens the transports the configuration asks for (transports.c, the one
 * place that names them), adopts those with threads of their own and
 * routes each RPC as it says. */
static int open_transports(momento_client *c)
{
    _Static_assert(MOMENTO__MAX_OWN_THREAD_TRANSPORTS <= MOMENTO__MAX_ADOPTED,
                   "room to adopt every transport with a thread of its own");
    momento__transports ts;
    int rc = momento__transports_open(&ts, &c->cfg, &c->creds);
    if (rc != MOMENTO_OK)
        return rc;
    c->transport = ts.loop;
    for (size_t i = 0; i < ts.n_own_thread; i++) {
        /* Cannot fail: each has shutdown and close, and there is room. */
        momento__client_adopt(c, ts.own_thread[i]);
    }
    for (size_t m = 0; m < MOMENTO__RPC_COUNT; m++) {
        if (ts.routes[m] == ts.loop)
            c->routes[m] = ts.loop;
        else
            momento__client_route(c, (momento__rpc_id)m, ts.routes[m]);
    }
    /* Transports the dispatching thread works: the application's loop
     * watches them through the dispatch fd, made an epoll set of theirs
     * and the queue's. */
    for (size_t i = 0; c->dispatch.on && i < c->n_adopted; i++) {
        momento__transport *t = c->adopted[i];
        if (t->ops->poll_fd && t->ops->step && t->ops->poll_fd(t) >= 0)
            c->stepped[c->n_stepped++] = t;
    }
    if (c->n_stepped) {
        c->dispatch_poll = epoll_create1(EPOLL_CLOEXEC);
        if (c->dispatch_poll < 0)
            return MOMENTO_ERR_NO_MEMORY;
        struct epoll_event ev = {.events = EPOLLIN};
        if (epoll_ctl(c->dispatch_poll, EPOLL_CTL_ADD, c->dispatch.fd, &ev) != 0)
            return MOMENTO_ERR_NO_MEMORY;
        for (size_t i = 0; i < c->n_stepped; i++)
            if (epoll_ctl(c->dispatch_poll, EPOLL_CTL_ADD,
                          c->stepped[i]->ops->poll_fd(c->stepped[i]), &ev) != 0)
                return MOMENTO_ERR_NO_MEMORY;
    }
    /* Batching steps aside where get, set and delete have no batch
     * commands: each request goes as its own command. */
    if (ts.unbatched)
        c->cfg.batch_min_in_flight = 0;
    return MOMENTO_OK;
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
    pthread_mutex_init(&c->gate.lock, NULL);
    momento__dispatcher_init(&c->dispatch, dispatched);
    pthread_mutex_init(&c->observers_lock, NULL);
    pthread_mutex_init(&c->topics_lock, NULL);
    pthread_mutex_init(&c->metrics_lock, NULL);
    atomic_init(&c->n_write_observers, 0);
    pthread_cond_init(&c->drained, NULL);
    pthread_cond_init(&c->idle, NULL);
    atomic_init(&c->n_requests, 0);
    c->auth_value = grpc_empty_slice();
    c->dispatch_poll = -1;
    momento__timers_init(c);
    atomic_init(&c->rpc_hook, NULL);
    atomic_init(&c->near, NULL);
    atomic_init(&c->n_rpcs, 0);
    atomic_init(&c->any_posted, false);
    momento__retries_init(&c->retries,
                          (uint64_t)(uintptr_t)c ^ (uint64_t)gpr_now(GPR_CLOCK_REALTIME).tv_nsec);

    int rc = cfg ? momento__config_copy(&c->cfg, cfg) : MOMENTO_OK;
    if (rc == MOMENTO_OK && c->cfg.dispatch)
        rc = momento__dispatcher_enable(&c->dispatch);
    /* Dispatch mode calls the hook on two threads: the completion thread
     * for a request with an RPC of its own, the dispatching one for those a
     * shared answer calls back there (call.h `late`); so do I/O-thread
     * callbacks: the completion thread and protosocket's I/O thread. One
     * lock keeps their calls apart. The default mode calls it on the
     * completion thread (but for two rare ends, momento/metrics.h) and
     * takes none. */
    if (rc == MOMENTO_OK && (c->cfg.dispatch || c->cfg.io_thread_callbacks) && c->cfg.metrics_fn)
        c->cfg.metrics_lock = &c->metrics_lock;
    if (rc == MOMENTO_OK)
        rc = momento__credentials_copy(&c->creds, creds);
    if (rc == MOMENTO_OK) {
        rc = momento__log_add_secret(c->creds.token);
        c->token_in_log_filter = rc == MOMENTO_OK;
    }
    if (rc == MOMENTO_OK) {
        c->auth_value = grpc_slice_from_copied_string(c->creds.token);
        for (size_t i = 0; rc == MOMENTO_OK && i < c->cfg.n_headers; i++)
            rc = momento__client_add_header(c, c->cfg.headers[i].name, c->cfg.headers[i].value);
    }
    if (rc == MOMENTO_OK)
        rc = open_transports(c);
    if (rc == MOMENTO_OK)
        rc = momento__completion_start(c, destroy);
    if (rc != MOMENTO_OK) {
        destroy(c);
        return rc;
    }
    /* The parts above the engine that start with the client (config.h). */
    if (c->cfg.on_client_new)
        c->cfg.on_client_new(c);
    *ret = c;
    return MOMENTO_OK;
}

void momento__client_observe_writes(momento_client *c, momento__write_observer *o)
{
    pthread_mutex_lock(&c->observers_lock);
    DL_APPEND(c->write_observers, o);
    atomic_fetch_add(&c->n_write_observers, 1);
    pthread_mutex_unlock(&c->observers_lock);
}

void momento__client_unobserve_writes(momento_client *c, momento__write_observer *o)
{
    pthread_mutex_lock(&c->observers_lock);
    DL_DELETE(c->write_observers, o);
    atomic_fetch_sub(&c->n_write_observers, 1);
    pthread_mutex_unlock(&c->observers_lock);
}

void momento__client_note_write(momento_client *c, const momento__write_observer *self,
                                const char *cache, const void *key, size_t key_len)
{
    /* None to tell: no observer, or only `self`, registered for as long as
     * its coalescer exists. (One that registers after this load cannot
     * hold a read this write must close: its reads all began after.) */
    if (atomic_load(&c->n_write_observers) <= (self ? 1u : 0u))
        return;
    size_t cache_len = strlen(cache);
    pthread_mutex_lock(&c->observers_lock);
    for (momento__write_observer *o = c->write_observers; o; o = o->next)
        if (o != self)
            o->written(o, cache, cache_len, key, key_len);
    pthread_mutex_unlock(&c->observers_lock);
}

void momento__client_note_flush(momento_client *c, const char *cache)
{
    if (atomic_load(&c->n_write_observers) == 0)
        return;
    size_t cache_len = strlen(cache);
    pthread_mutex_lock(&c->observers_lock);
    for (momento__write_observer *o = c->write_observers; o; o = o->next)
        if (o->flushed)
            o->flushed(o, cache, cache_len);
    pthread_mutex_unlock(&c->observers_lock);
}

/* The client goes before its observers: each is told (it may only be freed
 * from now on, and then does not deregister). */
static void detach_observers(momento_client *c)
{
    pthread_mutex_lock(&c->observers_lock);
    for (momento__write_observer *o = c->write_observers, *next; o; o = next) {
        next = o->next;
        DL_DELETE(c->write_observers, o);
        o->detached(o);
    }
    atomic_store(&c->n_write_observers, 0);
    pthread_mutex_unlock(&c->observers_lock);
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
    pthread_mutex_unlock(&c->lock);
    detach_observers(c);
    pthread_mutex_lock(&c->lock);
    /* Each tracked request still completes, with CANCELLED, through its
     * callback: its attempt is cancelled (t->cancel), or, without one, the
     * timer it waits on (a retry's, a queued request's, ...) fires at once. */
    for (momento__tracked *t = c->in_flight; t; t = t->next) {
        if (t->call)
            t->cancel(t->call, "cancelled: the client was freed");
        else if (t->wake)
            momento__timer_fire_soon_locked(c, t->wake);
    }
    bool wake = c->soon != NULL;
    if (momento__completion_here(c)) {
        /* Inside one of our callbacks, which is itself still counted in
         * flight: the completion thread finishes the job once it drains. */
        c->free_deferred = true;
        pthread_mutex_unlock(&c->lock);
        return;
    }
    if (wake) {
        pthread_mutex_unlock(&c->lock);
        momento__completion_kick(c);
        pthread_mutex_lock(&c->lock);
    }
    while (c->n_in_flight > 0)
        momento__client_wait_or_step(c, &c->drained, &c->lock, 10);
    pthread_mutex_unlock(&c->lock);

    momento__completion_stop(c);
    if (momento__dispatch_running_here(&c->dispatch)) {
        /* From a callback momento_client_dispatch() runs: that dispatch
         * releases the client when it returns (momento_client_dispatch). */
        c->dispatch.free_pending = true;
        return;
    }
    destroy(c);
}

int momento__client_accept(momento_client *c, momento__tracked *t, void *gc)
{
    /* One lock section accepts the request and publishes its attempt,
     * both of which momento_client_free() reads under the lock. */
    pthread_mutex_lock(&c->lock);
    if (c->closing) {
        pthread_mutex_unlock(&c->lock);
        return momento__refuse(MOMENTO_ERR_CLOSED, "the client is being freed");
    }
    DL_PREPEND(c->in_flight, t);
    c->n_in_flight++;
    atomic_fetch_add(&c->n_rpcs, 1);
    t->call = gc;
    if (gc && t->cancelled) /* its token fired while it was being submitted */
        t->cancel(gc, t->cancel_why);
    pthread_mutex_unlock(&c->lock);
    return MOMENTO_OK;
}

void *momento__client_publish(momento_client *c, momento__tracked *t, void *gc)
{
    pthread_mutex_lock(&c->lock);
    void *old = t->call;
    t->call = gc;
    if (gc && t->cancelled)
        t->cancel(gc, t->cancel_why);
    else if (gc && c->closing) /* the free's sweep of the list is over */
        t->cancel(gc, "cancelled: the client was freed");
    pthread_mutex_unlock(&c->lock);
    return old;
}

void *momento__client_wait_on(momento_client *c, momento__tracked *t, momento__timer *wake)
{
    pthread_mutex_lock(&c->lock);
    void *old = t->call;
    t->call = NULL;
    t->wake = wake;
    /* A cancel or the free's sweep that came while it had neither a gRPC
     * call nor this timer found nothing to end: the wait ends at once. */
    bool now = t->cancelled || c->closing;
    if (now)
        momento__timer_fire_soon_locked(c, wake);
    pthread_mutex_unlock(&c->lock);
    if (now && momento__current_client != c)
        momento__completion_kick(c);
    return old;
}

momento__timer *momento__client_unwake(momento_client *c, momento__tracked *t)
{
    pthread_mutex_lock(&c->lock);
    momento__timer *wake = t->wake;
    t->wake = NULL;
    pthread_mutex_unlock(&c->lock);
    return wake;
}

void momento__client_cancel(momento_client *c, momento__tracked *t, const char *why)
{
    pthread_mutex_lock(&c->lock);
    bool wake = false;
    if (!t->cancelled) {
        t->cancelled = true;
        t->cancel_why = why;
        if (t->call)
            t->cancel(t->call, why);
        else if (t->wake) { /* queued under the cap, waiting to retry or delivered late */
            momento__timer_fire_soon_locked(c, t->wake);
            wake = true;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (wake)
        momento__completion_kick(c);
}

bool momento__client_cancelled(momento_client *c, momento__tracked *t)
{
    pthread_mutex_lock(&c->lock);
    bool cancelled = t->cancelled;
    pthread_mutex_unlock(&c->lock);
    return cancelled;
}

void momento__client_retire(momento_client *c, momento__tracked *t)
{
    /* Queued requests leave before this one stops counting in flight, so
     * that the last retirement never finds work left behind (batcher.c). */
    if (!t->answered)
        atomic_fetch_sub(&c->n_rpcs, 1);
    momento__client_rpc_ended(c);
    pthread_mutex_lock(&c->lock);
    DL_DELETE(c->in_flight, t);
    if (--c->n_in_flight == 0 && c->closing) {
        pthread_cond_broadcast(&c->drained);
        /* A free deferred from a callback: the completion thread ends its
         * loop and releases the client (completion.c). */
        if (c->free_deferred)
            c->transport->ops->shutdown(c->transport);
    }
    pthread_mutex_unlock(&c->lock);
}

momento__rpc_hook *momento__client_install_rpc_hook(momento_client *c, momento__rpc_hook *h)
{
    momento__rpc_hook *none = NULL;
    /* Sequentially consistent, as the n_rpcs updates: a part that installs
     * its hook and then reads n_rpcs high is heard by the retirement that
     * lowers it, which loads the hook after its decrement. */
    if (atomic_compare_exchange_strong(&c->rpc_hook, &none, h))
        return h;
    return none;
}

momento__part *momento__client_install_near(momento_client *c, momento__part *p)
{
    momento__part *none = NULL;
    if (atomic_compare_exchange_strong(&c->near, &none, p))
        return p;
    return none;
}

void momento__client_rpc_ended(momento_client *c)
{
    momento__rpc_hook *h = atomic_load(&c->rpc_hook);
    if (h)
        h->rpc_done(h);
}

void momento__client_answered(momento_client *c, momento__tracked *t)
{
    t->answered = true;
    atomic_fetch_sub(&c->n_rpcs, 1);
}

bool momento__client_closing(momento_client *c)
{
    /* No lock: a free that begins just after this look is no different
     * from one that begins just after the caller's decision, and each
     * caller has a later check (the retirement that sends a queue, the
     * attempt's start) for that. */
    return atomic_load(&c->closing);
}

void momento__request_accepted(momento_client *c, momento_request_group *g)
{
    momento__group_add(g);
    atomic_fetch_add(&c->n_requests, 1);
}

void momento__request_done(momento_client *c, momento_request_group *g)
{
    /* The group first: once the client's count is 0, every group's is. */
    momento__group_done(g);
    if (atomic_fetch_sub(&c->n_requests, 1) == 1) {
        /* Under the lock, so a waiter that saw 1 is already waiting. */
        pthread_mutex_lock(&c->lock);
        pthread_cond_broadcast(&c->idle);
        pthread_mutex_unlock(&c->lock);
    }
}

size_t momento_client_in_flight(const momento_client *c)
{
    return c ? atomic_load(&((momento_client *)c)->n_requests) : 0;
}

/* The one wait of momento_client_wait_idle() and momento_request_group_wait():
 * until `*count` (broadcast on `zero` under `lock` when it drops to 0) is
 * 0, or `timeout_ms`. */
static int wait_zero(momento_client *c, atomic_size_t *count, pthread_mutex_t *lock,
                     pthread_cond_t *zero, uint32_t timeout_ms)
{
    /* The callbacks it would wait for run on this very thread. */
    if (momento__completion_here(c) || momento__dispatch_running_here(&c->dispatch))
        return MOMENTO_ERR_WOULD_DEADLOCK;
    int64_t until = momento__now_ns() + (int64_t)timeout_ms * 1000000;
    if (c->dispatch.on) {
        /* Dispatch mode: the callbacks wait for a dispatch, so waiting
         * means running them here (an application that waits is its loop). */
        struct pollfd p = {.fd = momento_client_dispatch_fd(c), .events = POLLIN};
        for (;;) {
            momento_client_dispatch(c, 0);
            if (atomic_load(count) == 0)
                return MOMENTO_OK;
            int64_t left = until - momento__now_ns();
            if (left <= 0)
                return MOMENTO_ERR_TIMEOUT;
            int ms = (int)(left / 1000000) + 1;
            (void)poll(&p, 1, ms < 50 ? ms : 50);
        }
    }
    gpr_timespec deadline = {until / 1000000000, (int32_t)(until % 1000000000), GPR_CLOCK_MONOTONIC};
    gpr_timespec abs = gpr_convert_clock_type(deadline, GPR_CLOCK_REALTIME);
    struct timespec ts = {abs.tv_sec, abs.tv_nsec};
    pthread_mutex_lock(lock);
    int rc = 0;
    while (atomic_load(count) > 0 && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(zero, lock, &ts);
    bool idle = atomic_load(count) == 0;
    pthread_mutex_unlock(lock);
    return idle ? MOMENTO_OK : MOMENTO_ERR_TIMEOUT;
}

int momento_client_wait_idle(momento_client *c, uint32_t timeout_ms)
{
    if (!c || timeout_ms > 86400000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return wait_zero(c, &c->n_requests, &c->lock, &c->idle, timeout_ms);
}

int momento_request_group_wait(momento_request_group *g, uint32_t timeout_ms)
{
    if (!g || timeout_ms > 86400000u)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return wait_zero(g->client, &g->n, &g->lock, &g->zero, timeout_ms);
}

int momento_client_dispatch_fd(const momento_client *c)
{
    if (!c || !c->dispatch.on)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return c->dispatch_poll >= 0 ? c->dispatch_poll : c->dispatch.fd;
}

bool momento__client_step(momento_client *c, int timeout_ms)
{
    for (size_t i = 0; i < c->n_stepped; i++)
        c->stepped[i]->ops->step(c->stepped[i], i == 0 ? timeout_ms : 0);
    return c->n_stepped > 0;
}

void momento__client_wait_or_step(momento_client *c, pthread_cond_t *cv, pthread_mutex_t *mu,
                                  int step_ms)
{
    if (!c->n_stepped) {
        pthread_cond_wait(cv, mu);
        return;
    }
    /* No thread ends what protosocket carries: the waiting one does. */
    pthread_mutex_unlock(mu);
    momento__client_step(c, step_ms);
    pthread_mutex_lock(mu);
}

int momento_client_dispatch(momento_client *c, size_t max)
{
    if (!c || !c->dispatch.on)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    /* The connections first: the replies they read queue their callbacks,
     * which run below in the same dispatch (so they need not signal). */
    if (c->n_stepped) {
        momento__dispatcher_will_run(&c->dispatch);
        momento__client_step(c, 0);
    }
    bool last_out;
    int ran = momento__dispatcher_run(&c->dispatch, max, &last_out);
    /* What those callbacks sent goes out now, not after another trip
     * through the application's poll. */
    if (!last_out && ran > 0 && c->n_stepped)
        momento__client_step(c, 0);
    /* momento_client_free() ran in one of those callbacks and left the
     * release to the outermost dispatch, which this was: the callbacks
     * still queued have run, and the client goes. */
    if (last_out)
        destroy(c);
    return ran;
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

size_t momento__dispatch_queued(momento_client *c)
{
    return momento__dispatcher_pending(&c->dispatch);
}
