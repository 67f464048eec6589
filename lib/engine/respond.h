/* Calling an application back (respond.c). Each place that calls one (call.c's
 * deliver, the coalescer's waiters, the batcher's members, the paged
 * listing, a subscription's events) goes through momento__respond() /
 * momento__respond_topic(), which call it at once in the default mode, and
 * in dispatch mode queue a copy of the result or event (dispatch.c). */
#ifndef MOMENTO_RESPOND_H
#define MOMENTO_RESPOND_H

#include "momento/momento.h"
#include "momento/topics.h"

#include <stdbool.h>

/* Calls back `cb` with `r` now, or - in dispatch mode, for a callback of
 * the application's (`internal` false) - queues a copy of `r` for
 * momento_client_dispatch(). The library's own callbacks (a coalescer's or
 * batcher's RPC, a listing's page, a blocking call's wake-up) always run at
 * once. An application's callback also ends its request's count
 * (momento__request_done), and in its `group` (NULL: none), once it has
 * returned. */
void momento__respond(momento_client *c, momento_request_group *group, momento_callback cb,
                      const momento_result *r, void *userdata, bool internal);

/* In dispatch mode: runs `fn(arg)` on the dispatching thread, from the
 * queue (a library callback delivered late, call.h `late`). Returns 0, or
 * MOMENTO_ERR_NO_MEMORY with nothing queued. */
int momento__respond_later(momento_client *c, void (*fn)(void *arg), void *arg);

/* Runs library callback `cb` delivered late: the application's callbacks
 * it calls through momento__respond() run at once, on this thread (the
 * dispatching one), not queued again. */
void momento__respond_late(momento_client *c, momento_callback cb, const momento_result *r,
                           void *userdata);

/* The same for a subscription's event: `sub` is kept alive (`ref`, then
 * `unref` after the callback) while its event waits. */
void momento__respond_topic(momento_client *c, momento_topic_callback cb, momento_subscription *sub,
                            const momento_topic_event *ev, void *userdata,
                            void (*ref)(momento_subscription *),
                            void (*unref)(momento_subscription *));

#endif
