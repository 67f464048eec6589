/* Dispatch mode's queue (dispatch.c): callbacks queued for the
 * application's own thread instead of run on the completion thread, and
 * the eventfd that tells an event loop when there is something to run.
 * momento__respond() (respond.c) decides what is queued;
 * momento_client_dispatch() (client.c) runs the queue on the caller's
 * thread through momento__dispatcher_run(). The queue knows no client:
 * news goes up through the `ran` callback its owner gives it. */
#ifndef MOMENTO_DISPATCH_H
#define MOMENTO_DISPATCH_H

#include "base/recycle.h"
#include "momento/momento.h"
#include "momento/topics.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct momento__deferred momento__deferred;

typedef struct momento__dispatcher {
    bool on;                    /* the config's; fixed for the client's life */
    int fd;                     /* eventfd, readable while callbacks wait; -1 when off */
    /* After each queued application callback (not a topic event's) has
     * returned, on the thread that ran it: its request is done. `tag` is
     * what the owner pushed with it. */
    void (*ran)(struct momento__dispatcher *d, void *tag);
    pthread_mutex_t lock;       /* the queue and the counters below */
    momento__deferred *head, *tail;
    momento__recycler spare;    /* run entries, for the next pushes */
    momento__deferred *taken;   /* off the queue, to run next: the running thread's */
    size_t pending;             /* queued, or being run */
    int depth;                  /* momento__dispatcher_run() calls on the stack */
    bool free_pending;          /* the owner was freed from a dispatched callback:
                                 * set by the owner, which the last run out tells */
} momento__dispatcher;

/* Off, until enabled (0 or MOMENTO_ERR_NO_MEMORY: no eventfd). */
void momento__dispatcher_init(momento__dispatcher *d,
                              void (*ran)(momento__dispatcher *d, void *tag));
int momento__dispatcher_enable(momento__dispatcher *d);
/* Callbacks queued, or being run, now (tests: lib/testing.h). Any thread. */
size_t momento__dispatcher_pending(momento__dispatcher *d);
/* Runs whatever is still queued (on the calling thread), then releases. */
void momento__dispatcher_close(momento__dispatcher *d);

/* Queues a copy of `r` (an error result saying so when it cannot be
 * copied) for `cb`, with the owner's `tag` for `ran` (the queue does not
 * read it). Returns 0, or MOMENTO_ERR_NO_MEMORY with nothing queued: then
 * the caller runs `cb` itself. Any thread. */
int momento__dispatcher_push(momento__dispatcher *d, momento_callback cb, const momento_result *r,
                             void *userdata, void *tag);
/* Queues `fn(arg)`, a function of the library's, to run in its turn on
 * the dispatching thread (no request is counted done after it). Returns 0
 * or MOMENTO_ERR_NO_MEMORY with nothing queued. Any thread. */
int momento__dispatcher_push_fn(momento__dispatcher *d, void (*fn)(void *arg), void *arg);
/* The same for a subscription's event, copied with its bytes: `sub` is kept
 * alive (`ref` now, `unref` after the callback) while its event waits. */
int momento__dispatcher_push_topic(momento__dispatcher *d, momento_topic_callback cb,
                                   momento_subscription *sub, const momento_topic_event *ev,
                                   void *userdata, void (*ref)(momento_subscription *),
                                   void (*unref)(momento_subscription *));

/* The calling thread runs `d` next (momento__dispatcher_run(), before
 * anything else of `d`'s): until then what it queues is not signalled on
 * the fd, which that run would only read back. */
void momento__dispatcher_will_run(momento__dispatcher *d);

/* Runs up to `max` queued callbacks (0: all) on this thread; returns how
 * many ran. Stops when a callback sets free_pending; the outermost run
 * then runs the rest and sets *ret_last_out: the caller finishes the
 * owner's free. */
int momento__dispatcher_run(momento__dispatcher *d, size_t max, bool *ret_last_out);

/* Whether momento__dispatcher_run() of `d` is on this thread's stack. */
bool momento__dispatch_running_here(const momento__dispatcher *d);

#endif
