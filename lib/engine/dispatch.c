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
 * only reports that it was the last out (momento__dispatcher_run).
 *
 * An entry is one allocation: the entry, then its result's copy. Entries
 * of up to ENTRY_BLOCK bytes - a get's, a set's, most others - go back to
 * the queue's recycler after their callback rather than to free(): made on
 * the completion thread and freed on the application's, they would
 * otherwise cross glibc's per-thread arenas one at a time, under the
 * completion thread's arena lock (base/recycle.h). A run takes the queue
 * whole and gives its entries back together, one lock round trip each.
 *
 * Besides the application's callbacks the queue carries functions of the
 * library's (momento__dispatcher_push_fn): a batch's or a coalesced read's
 * answer, delivered on this thread as a whole (call.h `late`). */
#include "engine/dispatch.h"

#include "base/alloc.h"
#include "base/fifo.h"
#include "base/recycle.h"
#include "model/result.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct momento__deferred {
    momento__deferred *next;
    bool recyclable;            /* ENTRY_BLOCK bytes: back to the recycler */
    void *userdata;
    /* A request's callback and its owned result (or `fallback`). */
    momento_callback cb;
    momento_result *result;
    momento_result fallback;
    void *tag;                  /* the owner's, handed back to `ran` */
    /* Or a function of the library's (momento__dispatcher_push_fn). */
    void (*fn)(void *arg);
    void *arg;
    /* Or a subscription's event, its strings and bytes in `data`. */
    momento_topic_callback tcb;
    momento_subscription *sub;
    void (*unref)(momento_subscription *);
    momento_topic_event ev;
    _Alignas(max_align_t) char data[]; /* the result's copy, or the event's bytes */
};

/* The recycled entries' size, and how many an idle queue keeps: 512 KiB. */
#define ENTRY_BLOCK 1024u
#define ENTRIES_KEPT 512u
/* A run gives back what ran every so many entries, and at its end. */
#define RELEASE_EVERY 64u

/* The dispatcher whose momento__dispatcher_run() runs on this thread, if
 * any: what tells its owner's free from a dispatched callback. */
static _Thread_local const momento__dispatcher *running_for;
/* The dispatcher whose run this thread is about to start
 * (momento__dispatcher_will_run()): what it queues needs no signal. */
static _Thread_local const momento__dispatcher *will_run;

void momento__dispatcher_init(momento__dispatcher *d,
                              void (*ran)(momento__dispatcher *d, void *tag))
{
    memset(d, 0, sizeof(*d));
    d->fd = -1;
    d->ran = ran;
    pthread_mutex_init(&d->lock, NULL);
    momento__recycler_init(&d->spare, ENTRY_BLOCK, ENTRIES_KEPT);
}

int momento__dispatcher_enable(momento__dispatcher *d)
{
    d->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (d->fd < 0)
        return MOMENTO_ERR_NO_MEMORY;
    d->on = true;
    return MOMENTO_OK;
}

/* Runs `e`'s callback; the entry itself is the caller's to release. */
static void run(momento__dispatcher *d, momento__deferred *e)
{
    if (e->fn) {
        e->fn(e->arg);
    } else if (e->tcb) {
        e->tcb(e->sub, &e->ev, e->userdata);
        e->unref(e->sub);
    } else {
        e->cb(e->result, e->userdata);
        d->ran(d, e->tag); /* news up: the owner counts the request done */
    }
}

/* Takes back `n` entries that have run (linked by `next`): recyclable ones
 * to the recycler while it has room, the rest freed, outside the lock. */
static void release(momento__dispatcher *d, momento__deferred *done, size_t n)
{
    if (!n)
        return;
    momento__deferred *unkept = NULL;
    pthread_mutex_lock(&d->lock);
    d->pending -= n;
    for (momento__deferred *e = done, *next; e; e = next) {
        next = e->next;
        if (!e->recyclable || !momento__recycler_give(&d->spare, e)) {
            e->next = unkept;
            unkept = e;
        }
    }
    pthread_mutex_unlock(&d->lock);
    for (momento__deferred *e = unkept, *next; e; e = next) {
        next = e->next;
        free(e);
    }
}

/* A new entry of `size` bytes in all, its header zeroed: ENTRY_BLOCK bytes
 * (and recyclable) when it fits in that. */
static momento__deferred *entry_alloc(size_t size)
{
    bool recyclable = size <= ENTRY_BLOCK;
    momento__deferred *e = momento__malloc(recyclable ? ENTRY_BLOCK : size);
    if (e) {
        memset(e, 0, offsetof(momento__deferred, data));
        e->recyclable = recyclable;
    }
    return e;
}

/* A reused entry, its header zeroed, or NULL when none is kept. The lock
 * held. */
static momento__deferred *entry_reuse_locked(momento__dispatcher *d)
{
    momento__deferred *e = momento__recycler_take(&d->spare);
    if (e) {
        memset(e, 0, offsetof(momento__deferred, data));
        e->recyclable = true;
    }
    return e;
}

/* An entry with room for `extra` bytes of data: reused when it fits. */
static momento__deferred *entry_new(momento__dispatcher *d, size_t extra)
{
    size_t size = offsetof(momento__deferred, data) + extra;
    if (size <= ENTRY_BLOCK) {
        pthread_mutex_lock(&d->lock);
        momento__deferred *e = entry_reuse_locked(d);
        pthread_mutex_unlock(&d->lock);
        if (e)
            return e;
    }
    return entry_alloc(size);
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

/* The next entry to run, from those taken from the queue's head in one
 * lock round trip (up to `want`). The taken ones are the dispatching
 * thread's - one at a time per client, and a nested run is on the same
 * thread and goes on where its caller was - so they need no lock. */
static momento__deferred *take(momento__dispatcher *d, size_t want)
{
    if (!d->taken) {
        pthread_mutex_lock(&d->lock);
        momento__deferred *last = NULL;
        size_t n = 0;
        for (momento__deferred *e = d->head; e && n < want; e = e->next, n++)
            last = e;
        if (last) {
            d->taken = d->head;
            d->head = last->next;
            if (!d->head)
                d->tail = NULL;
            last->next = NULL;
        }
        pthread_mutex_unlock(&d->lock);
    }
    momento__deferred *e = d->taken;
    if (e)
        d->taken = e->next;
    return e;
}

/* Entries taken and not run go back to the queue's head, in order: a run
 * stopped by `max` or by its owner's free leaves them queued. */
static void put_back(momento__dispatcher *d)
{
    if (!d->taken)
        return;
    momento__deferred *last = d->taken;
    while (last->next)
        last = last->next;
    pthread_mutex_lock(&d->lock);
    last->next = d->head;
    if (!d->head)
        d->tail = last;
    d->head = d->taken;
    pthread_mutex_unlock(&d->lock);
    d->taken = NULL;
}

/* Runs every entry still queued, one at a time (each may queue more). */
static int run_rest(momento__dispatcher *d)
{
    put_back(d);
    int ran = 0;
    for (momento__deferred *e; (e = pop(d));) {
        run(d, e);
        e->next = NULL;
        release(d, e, 1);
        ran++;
    }
    return ran;
}

void momento__dispatcher_close(momento__dispatcher *d)
{
    run_rest(d);
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
    momento__recycler_drain(&d->spare);
    pthread_mutex_destroy(&d->lock);
}

static void signal_fd(momento__dispatcher *d)
{
    /* This thread runs the queue next: a write here would only be read
     * back by that run (two system calls per dispatch for nothing). */
    if (will_run == d)
        return;
    uint64_t one = 1;
    /* Can only fail when the counter would overflow: it is readable then. */
    ssize_t n = write(d->fd, &one, sizeof(one));
    (void)n;
}

void momento__dispatcher_will_run(momento__dispatcher *d)
{
    will_run = d;
}

/* Appends `e`, the lock held; whether the queue was empty before. */
static bool link_locked(momento__dispatcher *d, momento__deferred *e)
{
    bool was_empty = d->head == NULL;
    MOMENTO__FIFO_APPEND(d->head, d->tail, e, next);
    d->pending++;
    return was_empty;
}

static void enqueue(momento__dispatcher *d, momento__deferred *e)
{
    pthread_mutex_lock(&d->lock);
    bool was_empty = link_locked(d, e);
    pthread_mutex_unlock(&d->lock);
    /* One write per empty-to-not-empty change: a dispatch runs the whole
     * queue, so the loop needs waking once, not once per callback. */
    if (was_empty)
        signal_fd(d);
}

int momento__dispatcher_push(momento__dispatcher *d, momento_callback cb, const momento_result *r,
                             void *userdata, void *tag)
{
    size_t size = offsetof(momento__deferred, data) + momento__result_copy_size(r);
    momento__deferred *e = NULL;
    if (size <= ENTRY_BLOCK) {
        /* Most results: a reused entry, filled and queued in one lock
         * round trip (the copy is a few hundred bytes). */
        bool was_empty = false;
        pthread_mutex_lock(&d->lock);
        if ((e = entry_reuse_locked(d))) {
            e->result = momento__result_copy_into(r, e->data);
            e->cb = cb;
            e->userdata = userdata;
            e->tag = tag;
            was_empty = link_locked(d, e);
        }
        pthread_mutex_unlock(&d->lock);
        if (e) {
            if (was_empty)
                signal_fd(d);
            return MOMENTO_OK;
        }
    }
    if ((e = entry_alloc(size))) {
        e->result = momento__result_copy_into(r, e->data);
    } else if ((e = entry_alloc(offsetof(momento__deferred, data)))) {
        /* The entry alone, with the error saying so for the result. */
        momento__result_local_error(&e->fallback, MOMENTO_ERR_NO_MEMORY,
                                    "out of memory: the result could not be kept for dispatch");
        e->fallback.attempts = r->attempts;
        e->fallback.transport = r->transport; /* its metrics record may come after */
        e->result = &e->fallback;
    } else {
        return MOMENTO_ERR_NO_MEMORY;
    }
    e->cb = cb;
    e->userdata = userdata;
    e->tag = tag;
    enqueue(d, e);
    return MOMENTO_OK;
}

int momento__dispatcher_push_fn(momento__dispatcher *d, void (*fn)(void *arg), void *arg)
{
    momento__deferred *e = entry_new(d, 0);
    if (!e)
        return MOMENTO_ERR_NO_MEMORY;
    e->fn = fn;
    e->arg = arg;
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
    momento__deferred *e = entry_new(d, ev->value_len + pub + msg);
    if (!e)
        return MOMENTO_ERR_NO_MEMORY;
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
    if (will_run == d)
        will_run = NULL;
    /* Reset readability first: whatever is queued from here on is either
     * run below or signals again. Always read: a flag saying whether it was
     * written could be seen before another thread's write and set after
     * it, which leaves the fd readable with nothing queued. */
    uint64_t count;
    ssize_t n = read(d->fd, &count, sizeof(count));
    (void)n; /* EAGAIN: nothing was signalled, which is fine */

    const momento__dispatcher *outer = running_for;
    running_for = d;
    pthread_mutex_lock(&d->lock);
    d->depth++;
    pthread_mutex_unlock(&d->lock);

    int ran = 0;
    momento__deferred *done = NULL;
    size_t n_done = 0;
    while (!max || (size_t)ran < max) {
        if (d->free_pending)
            break; /* a callback freed the owner: the rest run below */
        momento__deferred *e = take(d, max ? max - (size_t)ran : SIZE_MAX);
        if (!e)
            break;
        run(d, e);
        e->next = done;
        done = e;
        ran++;
        if (++n_done == RELEASE_EVERY) {
            release(d, done, n_done);
            done = NULL;
            n_done = 0;
        }
    }
    release(d, done, n_done);
    put_back(d);

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
        ran += run_rest(d);
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
