/* Dispatch mode: the application's callbacks queued for its own thread.
 *
 * In the default mode a callback runs on the client's completion thread
 * with a result borrowed from the library. In dispatch mode
 * (momento_config_set_dispatch()) the completion thread copies the result
 * (momento_result_dup) or the topic event into an entry and queues it; an
 * eventfd becomes readable when the queue goes from empty to not empty, and
 * momento_client_dispatch() runs the entries, in the order they completed,
 * on the caller's thread - libcurl's multi_socket and hiredis's adapters
 * give C event loops the same shape. The request itself has been retired
 * by then (its RPC is over), so nothing but the queue holds it.
 *
 * This file is the queue and the eventfd, and knows no client: what to
 * queue is decided by momento__respond() (respond.c), and the news that a
 * queued callback returned goes up through the `ran` callback the owner
 * gave. How long the client lives - a client freed with entries queued
 * runs them in momento_client_free(), a free from a dispatched callback
 * finishes when the outermost dispatch returns - is client.c's: the run
 * only reports that it was the last out (momento__dispatcher_run). */
#include "engine/dispatch.h"

#include "base/alloc.h"
#include "model/result.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct momento__deferred {
    momento__deferred *next;
    void *userdata;
    /* A request's callback and its owned result (or `fallback`). */
    momento_callback cb;
    momento_result *result;
    momento_result fallback;
    void *tag;                  /* the owner's, handed back to `ran` */
    /* Or a subscription's event, its strings and bytes in `data`. */
    momento_topic_callback tcb;
    momento_subscription *sub;
    void (*unref)(momento_subscription *);
    momento_topic_event ev;
    char data[];
};

/* The dispatcher whose momento__dispatcher_run() runs on this thread, if
 * any: what tells its owner's free from a dispatched callback. */
static _Thread_local const momento__dispatcher *running_for;

void momento__dispatcher_init(momento__dispatcher *d,
                              void (*ran)(momento__dispatcher *d, void *tag))
{
    memset(d, 0, sizeof(*d));
    d->fd = -1;
    d->ran = ran;
    pthread_mutex_init(&d->lock, NULL);
}

int momento__dispatcher_enable(momento__dispatcher *d)
{
    d->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (d->fd < 0)
        return MOMENTO_ERR_NO_MEMORY;
    d->on = true;
    return MOMENTO_OK;
}

static void run(momento__dispatcher *d, momento__deferred *e)
{
    if (e->tcb) {
        e->tcb(e->sub, &e->ev, e->userdata);
        e->unref(e->sub);
    } else {
        e->cb(e->result, e->userdata);
        if (e->result != &e->fallback)
            momento_result_free(e->result);
        d->ran(d, e->tag); /* news up: the owner counts the request done */
    }
    free(e);
}

static momento__deferred *pop(momento__dispatcher *d)
{
    pthread_mutex_lock(&d->lock);
    momento__deferred *e = d->head;
    if (e) {
        d->head = e->next;
        if (!d->head)
            d->tail = NULL;
    }
    pthread_mutex_unlock(&d->lock);
    return e;
}

static void ran_one(momento__dispatcher *d)
{
    pthread_mutex_lock(&d->lock);
    d->pending--;
    pthread_mutex_unlock(&d->lock);
}

void momento__dispatcher_close(momento__dispatcher *d)
{
    for (momento__deferred *e; (e = pop(d));) {
        run(d, e);
        ran_one(d);
    }
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
    pthread_mutex_destroy(&d->lock);
}

static void signal_fd(momento__dispatcher *d)
{
    uint64_t one = 1;
    /* Can only fail when the counter would overflow: it is readable then. */
    ssize_t n = write(d->fd, &one, sizeof(one));
    (void)n;
}

static void enqueue(momento__dispatcher *d, momento__deferred *e)
{
    e->next = NULL;
    pthread_mutex_lock(&d->lock);
    bool was_empty = d->head == NULL;
    if (d->tail)
        d->tail->next = e;
    else
        d->head = e;
    d->tail = e;
    d->pending++;
    pthread_mutex_unlock(&d->lock);
    /* One write per empty-to-not-empty change: a dispatch runs the whole
     * queue, so the loop needs waking once, not once per callback. */
    if (was_empty)
        signal_fd(d);
}

int momento__dispatcher_push(momento__dispatcher *d, momento_callback cb, const momento_result *r,
                             void *userdata, void *tag)
{
    momento__deferred *e = momento__malloc(sizeof(*e));
    if (!e)
        return MOMENTO_ERR_NO_MEMORY;
    memset(e, 0, sizeof(*e));
    e->cb = cb;
    e->userdata = userdata;
    e->tag = tag;
    if (momento_result_dup(r, &e->result) != MOMENTO_OK) {
        momento__result_local_error(&e->fallback, MOMENTO_ERR_NO_MEMORY,
                                    "out of memory: the result could not be kept for dispatch");
        e->fallback.attempts = r->attempts;
        e->result = &e->fallback;
    }
    enqueue(d, e);
    return MOMENTO_OK;
}

/* Copies `s` (n bytes) into *cursor and advances it. */
static const void *keep(char **cursor, const void *s, size_t n)
{
    char *at = *cursor;
    if (n)
        memcpy(at, s, n);
    *cursor += n;
    return at;
}

int momento__dispatcher_push_topic(momento__dispatcher *d, momento_topic_callback cb,
                                   momento_subscription *sub, const momento_topic_event *ev,
                                   void *userdata, void (*ref)(momento_subscription *),
                                   void (*unref)(momento_subscription *))
{
    size_t pub = ev->publisher_id ? strlen(ev->publisher_id) + 1 : 0;
    size_t msg = ev->message ? strlen(ev->message) + 1 : 0;
    momento__deferred *e = momento__malloc(sizeof(*e) + ev->value_len + pub + msg);
    if (!e)
        return MOMENTO_ERR_NO_MEMORY;
    memset(e, 0, sizeof(*e));
    e->tcb = cb;
    e->sub = sub;
    e->unref = unref;
    e->userdata = userdata;
    e->ev = *ev;
    char *cursor = e->data;
    e->ev.value = ev->value_len ? keep(&cursor, ev->value, ev->value_len) : NULL;
    if (pub)
        e->ev.publisher_id = keep(&cursor, ev->publisher_id, pub);
    if (msg)
        e->ev.message = keep(&cursor, ev->message, msg);
    ref(sub); /* the event keeps its subscription until its callback returns */
    enqueue(d, e);
    return MOMENTO_OK;
}

bool momento__dispatch_running_here(const momento__dispatcher *d)
{
    return running_for == d;
}

int momento__dispatcher_run(momento__dispatcher *d, size_t max, bool *ret_last_out)
{
    *ret_last_out = false;
    /* Reset readability first: whatever is queued from here on is either
     * run below or signals again. */
    uint64_t count;
    ssize_t n = read(d->fd, &count, sizeof(count));
    (void)n; /* EAGAIN: nothing was signalled, which is fine */

    const momento__dispatcher *outer = running_for;
    running_for = d;
    pthread_mutex_lock(&d->lock);
    d->depth++;
    pthread_mutex_unlock(&d->lock);

    int ran = 0;
    while (!max || (size_t)ran < max) {
        if (d->free_pending)
            break; /* a callback freed the owner: the rest run below */
        momento__deferred *e = pop(d);
        if (!e)
            break;
        run(d, e);
        ran_one(d);
        ran++;
    }

    pthread_mutex_lock(&d->lock);
    d->depth--;
    bool last_out = d->depth == 0 && d->free_pending;
    bool more = d->head != NULL;
    pthread_mutex_unlock(&d->lock);
    running_for = outer;
    if (last_out) {
        /* The owner's free ran in one of these callbacks and left its end
         * to the outermost run: the callbacks still queued run now
         * (whatever `max` said: nothing can run them later), and the caller
         * finishes the free. */
        for (momento__deferred *e; (e = pop(d));) {
            run(d, e);
            ran_one(d);
            ran++;
        }
        *ret_last_out = true;
        return ran;
    }
    if (more && !d->free_pending)
        signal_fd(d); /* stopped at `max`: stay readable */
    return ran;
}

size_t momento__dispatcher_pending(momento__dispatcher *d)
{
    pthread_mutex_lock(&d->lock);
    size_t n = d->pending;
    pthread_mutex_unlock(&d->lock);
    return n;
}
