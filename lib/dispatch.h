/* Dispatch mode (dispatch.c): callbacks queued for the application's own
 * thread instead of run on the completion thread. Each place that calls an
 * application's callback (call.c's deliver, the coalescer's waiters, the
 * batcher's members, the paged listing, a subscription's events) goes
 * through momento__respond() / momento__respond_topic(), which call it at
 * once in the default mode, and otherwise copy the result or event and
 * queue it; momento_client_dispatch() runs the queue on the caller's thread
 * and an eventfd tells an event loop when there is something to run. */
#ifndef MOMENTO_DISPATCH_H
#define MOMENTO_DISPATCH_H

#include "momento/momento.h"
#include "momento/topics.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct momento__deferred momento__deferred;

typedef struct momento__dispatcher {
    bool on;                    /* the config's; fixed for the client's life */
    int fd;                     /* eventfd, readable while callbacks wait; -1 when off */
    pthread_mutex_t lock;       /* the queue and the counters below */
    momento__deferred *head, *tail;
    size_t pending;             /* queued, or being run */
    int depth;                  /* momento_client_dispatch() calls on the stack */
    bool free_pending;          /* momento_client_free() from a dispatched callback */
} momento__dispatcher;

/* Off, until enabled (0 or MOMENTO_ERR_NO_MEMORY: no eventfd). */
void momento__dispatcher_init(momento__dispatcher *d);
int momento__dispatcher_enable(momento__dispatcher *d);
/* Runs whatever is still queued (on the calling thread), then releases. */
void momento__dispatcher_close(momento__dispatcher *d);

/* Calls back `cb` with `r` now, or - in dispatch mode, for a callback of
 * the application's (`internal` false) - queues a copy of `r` for
 * momento_client_dispatch(). The library's own callbacks (a coalescer's or
 * batcher's RPC, a listing's page, a blocking call's wake-up) always run at
 * once. */
void momento__respond(momento_client *c, momento_callback cb, const momento_result *r,
                      void *userdata, bool internal);
/* (An application's callback - not `internal` - also ends its request's
 * count, momento__request_done(), once it has returned.) */

/* The same for a subscription's event: `sub` is kept alive (`ref`, then
 * `unref` after the callback) while its event waits. */
void momento__respond_topic(momento_client *c, momento_topic_callback cb, momento_subscription *sub,
                            const momento_topic_event *ev, void *userdata,
                            void (*ref)(momento_subscription *),
                            void (*unref)(momento_subscription *));

/* Queued callbacks not yet run (momento_client_in_flight() counts them). */
size_t momento__dispatch_pending(momento_client *c);

/* client.c: whether momento_client_free() is being called from a callback
 * that momento_client_dispatch() is running on this thread for `c`; then
 * the free finishes when that dispatch returns (it marks free_pending). */
bool momento__dispatch_running_here(const momento_client *c);

#endif
