/* The client's completion thread (completion.c): the one thread that runs
 * the loop transport, the done() of attempts other transports post from
 * their own threads, and the client's timers, and so every callback of
 * the default mode. */
#ifndef MOMENTO_COMPLETION_H
#define MOMENTO_COMPLETION_H

#include "momento/momento.h"
#include "transport/transport.h"

#include <stdbool.h>

/* The client whose completion thread is running this code, or NULL. */
extern _Thread_local const momento_client *momento__current_client;

/* Whether this thread is finishing `c`'s attempts: its completion thread,
 * or a transport's own thread running done() through finish(). From
 * there a callback of `c`'s may run (a metrics hook, or in dispatch mode
 * one the queue had no memory for), so what would wait for `c`'s ends -
 * a blocking call, the client's free, a wait for idle - must not wait. */
bool momento__completion_here(const momento_client *c);

/* Starts `c`'s completion thread (named "momento-cq") on c->transport.
 * `release` frees the client: the thread calls it as it ends when
 * momento_client_free() was called from one of its callbacks
 * (c->free_deferred), since nobody will join it then. Returns 0, or
 * MOMENTO_ERR_NO_MEMORY (no thread was started). */
int momento__completion_start(momento_client *c, void (*release)(momento_client *c));
/* Shuts the loop transport down and joins the thread, once every request
 * is retired. Not from the completion thread. */
void momento__completion_stop(momento_client *c);

/* Wakes the completion thread (the transport's run() returns), so that it
 * looks at its timers and posted attempts again. Any thread. */
void momento__completion_kick(momento_client *c);

/* A routed transport's post() (transport.h): hands attempt `a`, finished
 * on `t`'s own thread, to t->host's completion thread, which calls its
 * done(). Any thread. */
void momento__completion_post(momento__transport *t, momento__attempt *a);

/* A routed transport's finish() (transport.h): from `t`'s own thread,
 * holding none of its locks. In dispatch mode runs a->done(a) here, else
 * posts it. */
void momento__completion_finish(momento__transport *t, momento__attempt *a);

/* With the client's lock held, after its timer heap or soon list changed:
 * records whether any timer waits, for the loop's look without the lock. */
void momento__completion_timers_changed_locked(momento_client *c);

#endif
