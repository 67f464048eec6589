/* The client's completion thread: its loop runs the loop transport
 * (gRPC's) until that is shut down and drained, and after each of its
 * events the done() of attempts other transports finished on their own
 * threads (posted here), then the timers that are due. Every wait of the
 * thread is the transport's run() bounded by the next timer, so one clock
 * structure (timer.c) serves retries, deadlines and lingers alike. */
#include "engine/completion.h"

#include "base/fifo.h"
#include "clock.h"
#include "engine/client.h"

#include <pthread.h>
#include <stddef.h>
#include <unistd.h>
#include <utlist.h>

_Thread_local const momento_client *momento__current_client;
/* The client whose attempts a transport's own thread is finishing here
 * (momento__completion_finish), or NULL. */
static _Thread_local const momento_client *finishing;

bool momento__completion_here(const momento_client *c)
{
    return momento__current_client == c || finishing == c;
}

void momento__completion_kick(momento_client *c)
{
    c->transport->ops->wake(c->transport);
}

void momento__completion_timers_changed_locked(momento_client *c)
{
    atomic_store_explicit(&c->any_timer, c->soon || momento__heap_peek(&c->timers),
                          memory_order_release);
}

void momento__completion_post(momento__transport *t, momento__attempt *a)
{
    momento_client *c = t->host;
    pthread_mutex_lock(&c->lock);
    MOMENTO__FIFO_APPEND(c->posted, c->posted_tail, a, posted);
    pthread_mutex_unlock(&c->lock);
    atomic_store_explicit(&c->any_posted, true, memory_order_release);
    if (momento__current_client != c)
        momento__completion_kick(c);
}

void momento__completion_finish(momento__transport *t, momento__attempt *a)
{
    momento_client *c = t->host;
    /* In dispatch mode done() queues every application callback for the
     * dispatching thread, so the transport's thread runs no application
     * code but the metrics hook (and, without memory for a queue entry, a
     * callback). In the default mode callbacks run in done(): here only
     * when the application asked for them on the I/O thread
     * (momento_config_set_io_thread_callbacks()), on the completion thread
     * otherwise, as promised. */
    if (!c->dispatch.on && !c->cfg.io_thread_callbacks) {
        momento__completion_post(t, a);
        return;
    }
    const momento_client *outer = finishing;
    finishing = c;
    a->done(a);
    finishing = outer;
}

/* Runs done() of every attempt posted so far, oldest first. */
static void posted_run(momento_client *c)
{
    /* Lowered before the list is taken: a post after this raises it again
     * (and kicks), so none is left behind until the next post. */
    atomic_store_explicit(&c->any_posted, false, memory_order_relaxed);
    pthread_mutex_lock(&c->lock);
    momento__attempt *a = c->posted;
    c->posted = c->posted_tail = NULL;
    pthread_mutex_unlock(&c->lock);
    while (a) {
        momento__attempt *next = a->posted; /* done() may end and reuse it */
        a->done(a);
        a = next;
    }
}

/* Fires `t`, just taken off the heap or the soon list with the lock held,
 * and lets the lock go for it. `firing` is set under the lock: a disarm by
 * another thread, which takes the lock, sees it (momento__timer_settle). */
#ifdef MOMENTO__TSAN
/* Race-check builds only (-Dtsan=true): the stress test holds each fire
 * this long before it runs, which widens the window in which another
 * thread finishes and frees a timer's owner (momento__timer_settle). */
atomic_int momento__tsan_fire_delay_us;
#endif

static void fire(momento_client *c, momento__timer *t)
{
    atomic_store_explicit(&c->firing, t, memory_order_release);
    pthread_mutex_unlock(&c->lock);
#ifdef MOMENTO__TSAN
    int delay_us = atomic_load_explicit(&momento__tsan_fire_delay_us, memory_order_relaxed);
    if (delay_us > 0)
        usleep((useconds_t)delay_us);
#endif
    t->fire(t);
    atomic_store_explicit(&c->firing, NULL, memory_order_release);
}

/* Fires the timers that are due; returns when the next one is (INT64_MAX:
 * none waits). */
static int64_t timers_run(momento_client *c)
{
    /* No lock when no timer waits: this runs after every event. One armed
     * by another thread after this look wakes the loop (a kick) as before. */
    if (!atomic_load_explicit(&c->any_timer, memory_order_acquire))
        return INT64_MAX;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        momento__timer *t = c->soon;
        if (t) {
            DL_DELETE(c->soon, t);
            t->soon = false;
            momento__completion_timers_changed_locked(c);
            fire(c, t);
            continue;
        }
        t = momento__heap_peek(&c->timers);
        /* The clock only when a timer waits: this runs after every event. */
        if (!t || t->due_ns > momento__now_ns()) {
            /* Read under the lock: another thread may re-arm it. */
            int64_t due = t ? t->due_ns : INT64_MAX;
            pthread_mutex_unlock(&c->lock);
            return due;
        }
        momento__heap_pop(&c->timers);
        momento__completion_timers_changed_locked(c);
        fire(c, t);
    }
}

static void *completion_loop(void *arg)
{
    momento_client *c = arg;
    momento__current_client = c;
    momento__transport *t = c->transport;
    /* Sleep until the transport's next event or the next timer (a retry's
     * among them), until the transport is shut down and drained. */
    for (int64_t wake = INT64_MAX; t->ops->run(t, wake);) {
        if (atomic_load_explicit(&c->any_posted, memory_order_acquire))
            posted_run(c);
        wake = timers_run(c);
    }
    momento__current_client = NULL;

    pthread_mutex_lock(&c->lock);
    bool deferred = c->free_deferred;
    pthread_mutex_unlock(&c->lock);
    if (deferred) {
        /* momento_client_free() was called from a callback: nobody will join
         * this thread, so it releases the client itself. */
        pthread_detach(pthread_self());
        c->release(c);
    }
    return NULL;
}

int momento__completion_start(momento_client *c, void (*release)(momento_client *c))
{
    c->release = release;
    if (pthread_create(&c->thread, NULL, completion_loop, c) != 0)
        return MOMENTO_ERR_NO_MEMORY;
    /* Named, so that libmomento's thread can be told from gRPC's (in a
     * debugger, and by tests/lib/test_threads.c); here rather than
     * in the thread, so it has its name before momento_client_new()
     * returns. */
    pthread_setname_np(c->thread, "momento-cq");
    return MOMENTO_OK;
}

void momento__completion_stop(momento_client *c)
{
    c->transport->ops->shutdown(c->transport);
    pthread_join(c->thread, NULL);
}
