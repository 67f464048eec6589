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
 * by then (its RPC is over), so nothing but the queue holds it: a client
 * freed with entries queued runs them in momento_client_free(), and a free
 * from a dispatched callback finishes when that dispatch returns. */
#include "dispatch.h"

#include "alloc.h"
#include "blocking.h"
#include "client.h"
#include "result.h"

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
    momento_client *client;     /* whose request count it holds */
    momento_result *result;
    momento_result fallback;
    /* Or a subscription's event, its strings and bytes in `data`. */
    momento_topic_callback tcb;
    momento_subscription *sub;
    void (*unref)(momento_subscription *);
    momento_topic_event ev;
    char data[];
};

/* The client whose momento_client_dispatch() runs on this thread, if any:
 * what tells a free from a dispatched callback. */
static _Thread_local const momento_client *running_for;

void momento__dispatcher_init(momento__dispatcher *d)
{
    memset(d, 0, sizeof(*d));
    d->fd = -1;
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

static void run(momento__deferred *e)
{
    if (e->tcb) {
        e->tcb(e->sub, &e->ev, e->userdata);
        e->unref(e->sub);
    } else {
        e->cb(e->result, e->userdata);
        if (e->result != &e->fallback)
            momento_result_free(e->result);
        momento__request_done(e->client);
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
        run(e);
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

void momento__respond(momento_client *c, momento_callback cb, const momento_result *r,
                      void *userdata, bool internal)
{
    momento__dispatcher *d = &c->dispatch;
    if (internal) {
        cb(r, userdata);
        return;
    }
    if (!d->on || cb == momento__blocking_done) {
        cb(r, userdata);
        momento__request_done(c); /* only now: "in flight" until it returned */
        return;
    }
    momento__deferred *e = momento__malloc(sizeof(*e));
    if (!e) {
        /* No memory to queue it: calling back here, on the completion
         * thread, breaks the mode's thread rule but not exactly-once. */
        cb(r, userdata);
        momento__request_done(c);
        return;
    }
    memset(e, 0, sizeof(*e));
    e->client = c;
    e->cb = cb;
    e->userdata = userdata;
    if (momento_result_dup(r, &e->result) != MOMENTO_OK) {
        momento__result_local_error(&e->fallback, MOMENTO_ERR_NO_MEMORY,
                                    "out of memory: the result could not be kept for dispatch");
        e->fallback.attempts = r->attempts;
        e->result = &e->fallback;
    }
    enqueue(d, e);
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

void momento__respond_topic(momento_client *c, momento_topic_callback cb, momento_subscription *sub,
                            const momento_topic_event *ev, void *userdata,
                            void (*ref)(momento_subscription *),
                            void (*unref)(momento_subscription *))
{
    momento__dispatcher *d = &c->dispatch;
    if (!d->on) {
        cb(sub, ev, userdata);
        return;
    }
    size_t pub = ev->publisher_id ? strlen(ev->publisher_id) + 1 : 0;
    size_t msg = ev->message ? strlen(ev->message) + 1 : 0;
    momento__deferred *e = momento__malloc(sizeof(*e) + ev->value_len + pub + msg);
    if (!e) {
        cb(sub, ev, userdata); /* as momento__respond() */
        return;
    }
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
}

size_t momento__dispatch_pending(momento_client *c)
{
    momento__dispatcher *d = &c->dispatch;
    if (!d->on)
        return 0;
    pthread_mutex_lock(&d->lock);
    size_t n = d->pending;
    pthread_mutex_unlock(&d->lock);
    return n;
}

bool momento__dispatch_running_here(const momento_client *c)
{
    return running_for == c;
}

int momento_client_dispatch_fd(const momento_client *c)
{
    if (!c || !c->dispatch.on)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    return c->dispatch.fd;
}

int momento_client_dispatch(momento_client *c, size_t max)
{
    if (!c || !c->dispatch.on)
        return MOMENTO_ERR_INVALID_ARGUMENT;
    momento__dispatcher *d = &c->dispatch;
    /* Reset readability first: whatever is queued from here on is either
     * run below or signals again. */
    uint64_t count;
    ssize_t n = read(d->fd, &count, sizeof(count));
    (void)n; /* EAGAIN: nothing was signalled, which is fine */

    const momento_client *outer = running_for;
    running_for = c;
    pthread_mutex_lock(&d->lock);
    d->depth++;
    pthread_mutex_unlock(&d->lock);

    int ran = 0;
    while (!max || (size_t)ran < max) {
        if (d->free_pending)
            break; /* a callback freed the client: the rest run below */
        momento__deferred *e = pop(d);
        if (!e)
            break;
        run(e);
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
        /* momento_client_free() ran in one of these callbacks and left the
         * release to the outermost dispatch: the callbacks still queued run
         * now (whatever `max` said: nothing can run them later), then the
         * client goes. */
        for (momento__deferred *e; (e = pop(d));) {
            run(e);
            ran_one(d);
            ran++;
        }
        momento__client_destroy(c);
        return ran;
    }
    if (more && !d->free_pending)
        signal_fd(d); /* stopped at `max`: stay readable */
    return ran;
}
