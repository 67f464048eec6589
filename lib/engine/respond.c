/* Calling an application back: at once, or queued for dispatch (respond.h).
 * Above the client, whose request count a callback ends, the blocking
 * calls, whose wake-ups never wait for a dispatch (the waiting thread may
 * be the very one that would run it), and the queue. */
#include "engine/respond.h"

#include "engine/blocking.h"
#include "engine/client.h"
#include "engine/dispatch.h"

/* The client whose late answer (momento__respond_late) runs on this
 * thread, if any. */
static _Thread_local const momento_client *late_for;

void momento__respond(momento_client *c, momento_request_group *group, momento_callback cb,
                      const momento_result *r, void *userdata, bool internal)
{
    if (internal) {
        cb(r, userdata);
        return;
    }
    if (cb == momento__blocking_done) {
        /* A blocking call counts until it has its result: given back before
         * the wake-up, so that once the call has returned neither the client
         * nor its group counts it any more. Never queued: the waiting
         * thread may be the very one that would run the dispatch. */
        momento__request_done(c, group);
        cb(r, userdata);
        return;
    }
    if (late_for == c) {
        /* Already on the dispatching thread, in the queue's order. */
        cb(r, userdata);
        momento__request_done(c, group);
        return;
    }
    if (!c->dispatch.on ||
        momento__dispatcher_push(&c->dispatch, cb, r, userdata, group) != MOMENTO_OK) {
        /* Without memory to queue it, calling back here, on the completion
         * thread, breaks the mode's thread rule but not exactly-once. */
        cb(r, userdata);
        momento__request_done(c, group); /* only now: "in flight" until it returned */
    }
}

int momento__respond_later(momento_client *c, void (*fn)(void *arg), void *arg)
{
    return momento__dispatcher_push_fn(&c->dispatch, fn, arg);
}

void momento__respond_late(momento_client *c, momento_callback cb, const momento_result *r,
                           void *userdata)
{
    const momento_client *outer = late_for;
    late_for = c;
    cb(r, userdata);
    late_for = outer;
}

void momento__respond_topic(momento_client *c, momento_topic_callback cb, momento_subscription *sub,
                            const momento_topic_event *ev, void *userdata,
                            void (*ref)(momento_subscription *),
                            void (*unref)(momento_subscription *))
{
    if (!c->dispatch.on || momento__dispatcher_push_topic(&c->dispatch, cb, sub, ev, userdata, ref,
                                                          unref) != MOMENTO_OK)
        cb(sub, ev, userdata); /* as momento__respond() */
}
