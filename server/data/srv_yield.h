/* The three calls of srv_turns.h that work in long loops makes, for the
 * modules below the server's core (the collections' structures) that need
 * nothing else of it. Declared here, in data/, as what this layer asks of
 * whoever runs it, so that data/ includes nothing above it; core/turns.c
 * defines them (a per-step call in the structures' loops, with no handle
 * to hang a hook on: the store, which has one, takes its own,
 * store_set_yield()). Server threads only; outside a call's work each
 * does nothing (srv_let_go() returns false). */
#ifndef MOMENTO_LOCAL_SRV_YIELD_H
#define MOMENTO_LOCAL_SRV_YIELD_H

#include <stdbool.h>

/* Once per step of a loop whose length a request or a collection sets. */
void srv_yield(void);
/* For work that reads nothing shared but the request's pinned keys and
 * its own memory: gives the turn up and returns true, or keeps it and
 * returns false. srv_take_back() after a true. */
bool srv_let_go(void);
void srv_take_back(void);

#endif
